package jsondoc

import (
	"unicode"
	"unicode/utf8"
)

// keyLess is go-yaml v2's keyList.Less for two string keys (sorter.go):
// letters before other characters, runs of digits compared by value.
func keyLess(a, b []byte) bool {
	// The common case: keys that differ first at two letters, or where
	// one key is a prefix of the other, before any digit.
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca >= utf8.RuneSelf || cb >= utf8.RuneSelf || ca >= '0' && ca <= '9' || cb >= '0' && cb <= '9' {
			break
		}
		if ca == cb {
			if i == len(a)-1 || i == len(b)-1 {
				if len(a) != len(b) && (len(a) == i+1 || len(b) == i+1) {
					return len(a) < len(b)
				}
			}
			continue
		}
		al, bl := isASCIILetter(ca), isASCIILetter(cb)
		switch {
		case al && bl:
			return ca < cb
		case al || bl:
			return bl
		}
		// Two other characters: not digits (checked above), so the
		// comparison below ends with their order.
		return ca < cb
	}
	if isASCII(a) && isASCII(b) {
		return keyLessRunes(len(a), len(b), func(i int) rune { return rune(a[i]) }, func(i int) rune { return rune(b[i]) })
	}
	ar, br := []rune(string(a)), []rune(string(b))
	return keyLessRunes(len(ar), len(br), func(i int) rune { return ar[i] }, func(i int) rune { return br[i] })
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isASCII(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// keyLessRunes is the comparison of keyList.Less on the runes of two
// strings of la and lb runes.
func keyLessRunes(la, lb int, ar, br func(int) rune) bool {
	for i := 0; i < la && i < lb; i++ {
		if ar(i) == br(i) {
			continue
		}
		al := unicode.IsLetter(ar(i))
		bl := unicode.IsLetter(br(i))
		if al && bl {
			return ar(i) < br(i)
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if ar(i) == '0' || br(i) == '0' {
			for j := i - 1; j >= 0 && unicode.IsDigit(ar(j)); j-- {
				if ar(j) != '0' {
					an = 1
					bn = 1
					break
				}
			}
		}
		for ai = i; ai < la && unicode.IsDigit(ar(ai)); ai++ {
			an = an*10 + int64(ar(ai)-'0')
		}
		for bi = i; bi < lb && unicode.IsDigit(br(bi)); bi++ {
			bn = bn*10 + int64(br(bi)-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return ar(i) < br(i)
	}
	return la < lb
}
