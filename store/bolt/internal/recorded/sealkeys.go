package recorded

import (
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/warmcache/warmcache/store/bolt/internal/layout"
	"github.com/warmcache/warmcache/store/codec"
)

// keyChecker is what a codec that seals payloads under keys (package
// store/seal's Codec) tells: whether a payload was sealed with the key
// that seals new writes, or an error when none of its keys opens it. It
// reads a payload's header only.
type keyChecker interface {
	CheckKey(payload []byte) (current bool, err error)
}

// sealFindings is what checkSealKeys learned of a sealed resource.
type sealFindings struct {
	unreadable string // why the data must be discarded, "" if it need not
	stale      int64  // objects sealed with a key other than the sealing key
}

// checkSealKeys reads the header of every live payload of res when c seals
// them. A payload sealed with a key c does not hold (a missing or wrong
// key) makes the whole resource unreadable: it is discarded and relisted
// rather than served with holes. Payloads sealed with an older key c still
// holds are counted as stale: the resource is readable, and a relist
// rewrites them with the current key. Envelopes that do not parse are left
// to the read path, which reports them as corrupt.
func checkSealKeys(res *bbolt.Bucket, c codec.Codec) sealFindings {
	var f sealFindings
	kc, ok := c.(keyChecker)
	if !ok {
		return f
	}
	g, err := layout.OpenLive(res)
	if err != nil {
		return f // checkLive reported it
	}
	cur := g.Items.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		envb, err := g.EnvelopeOf(k, v)
		if err != nil {
			continue
		}
		payload, err := layout.EnvelopePayload(envb)
		if err != nil {
			continue
		}
		current, err := kc.CheckKey(payload)
		if err != nil {
			f.unreadable = fmt.Sprintf("item %q cannot be opened with the configured keys: %v", k, err)
			return f
		}
		if !current {
			f.stale++
		}
	}
	return f
}
