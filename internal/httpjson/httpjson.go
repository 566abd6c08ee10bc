// Package httpjson answers HTTP requests with JSON documents, for the
// servers of the tests and benchmarks (internal/fakeapi, the benchmarks'
// API server processes).
package httpjson

import (
	"encoding/json"
	"net/http"
)

// Write answers with v marshalled as JSON, status 200 and Content-Type
// application/json; if v does not marshal, it answers 500 with the error
// as plain text instead, having written nothing else.
func Write(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
