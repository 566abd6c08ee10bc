package httpjson

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWrite(t *testing.T) {
	cases := []struct {
		name     string
		v        any
		code     int
		ctype    string
		wantBody string
	}{
		{name: "document", v: struct {
			Addr string `json:"addr"`
		}{"127.0.0.1:1"}, code: http.StatusOK, ctype: "application/json", wantBody: `{"addr":"127.0.0.1:1"}`},
		{name: "empty", v: struct{}{}, code: http.StatusOK, ctype: "application/json", wantBody: `{}`},
		{name: "unmarshallable", v: make(chan int), code: http.StatusInternalServerError, ctype: "text/plain; charset=utf-8", wantBody: "json: unsupported type: chan int\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Write(rec, tc.v)
			if rec.Code != tc.code {
				t.Errorf("status %d, want %d", rec.Code, tc.code)
			}
			if got := rec.Header().Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if got := rec.Body.String(); got != tc.wantBody {
				t.Errorf("body %q, want %q", got, tc.wantBody)
			}
		})
	}
}
