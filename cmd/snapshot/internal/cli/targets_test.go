package cli

import "testing"

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"cache.db":                         "cache.db",
		"/var/lib/app/cache-1.db":          "/var/lib/app/cache-1.db",
		"my cache.db":                      "'my cache.db'",
		"res;g=;v=v1;r=pods;k=Pod;ns=a;l=": "'res;g=;v=v1;r=pods;k=Pod;ns=a;l='",
		"it's":                             `'it'\''s'`,
		"":                                 "''",
		"$(rm -rf x)":                      "'$(rm -rf x)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
