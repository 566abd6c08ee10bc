package codec

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

// TestFloat16 checks the half-precision conversion against a reference
// implementation for every one of the 65536 values.
func TestFloat16(t *testing.T) {
	for h := range 1 << 16 {
		got := float16ToFloat64(uint16(h))
		want := float64(float16.Frombits(uint16(h)).Float32())
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Errorf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

// TestCBORDecodeAcceptsOtherWidths checks inputs the encoder never writes
// but a CBOR writer may: non-shortest heads, text strings and narrower
// floats.
func TestCBORDecodeAcceptsOtherWidths(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want interface{}
	}{
		{"int in 8 bytes", []byte{0x1b, 0, 0, 0, 0, 0, 0, 0, 5}, int64(5)},
		{"negative int", []byte{0x38, 0xff}, int64(-256)},
		{"min int64", []byte{0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, int64(math.MinInt64)},
		{"text string", []byte{0x62, 'h', 'i'}, "hi"},
		{"float16", []byte{0xf9, 0x3c, 0x00}, 1.0},
		{"float32", []byte{0xfa, 0x3f, 0xc0, 0x00, 0x00}, 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := cborDecoder{data: tt.data}
			got, err := d.value(0)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
	for name, data := range map[string][]byte{
		"uint over int64":        {0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0},
		"negative over int64":    {0x3b, 0x80, 0, 0, 0, 0, 0, 0, 0},
		"invalid utf-8 text":     {0x61, 0xff},
		"tag":                    {0xc1, 0x00},
		"undefined":              {0xf7},
		"indefinite array":       {0x9f, 0xff},
		"float16 NaN":            {0xf9, 0x7e, 0x00},
		"float64 Inf":            {0xfb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0},
		"duplicate key":          {0xa2, 0x41, 'a', 0x01, 0x41, 'a', 0x02},
		"int key":                {0xa1, 0x01, 0x01},
		"array longer than data": {0x9a, 0xff, 0xff, 0xff, 0xff},
		"map longer than data":   {0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"truncated head":         {0x19, 0x01},
		"empty":                  {},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			d := cborDecoder{data: data}
			if v, err := d.value(0); err == nil {
				t.Errorf("decoded %#v, want an error", v)
			}
		})
	}
}
