package factory

import "github.com/warmcache/warmcache/store/codec"

// WrapCodecs makes f wrap the codec of every bolt store it opens from now
// on with wrap (a test's decode counter).
func WrapCodecs(f *Factory, wrap func(codec.Codec) codec.Codec) { f.wrapCodec = wrap }
