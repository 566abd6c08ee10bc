package apiproc

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/warmcache/warmcache/internal/testkit"
)

// frames returns a stream of the events in contentType's framing.
func frames(protobuf bool, events ...string) []byte {
	var out []byte
	for _, e := range events {
		if protobuf {
			out = binary.BigEndian.AppendUint32(out, uint32(len(e)))
			out = append(out, e...)
		} else {
			out = append(out, e+"\n"...)
		}
	}
	return out
}

func TestReadStreamSplitsFrames(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // beyond the reader's buffer
	events := []string{"a", "", long, "bcd"}
	for _, tc := range []struct {
		name        string
		contentType string
		protobuf    bool
	}{
		{"protobuf", "application/vnd.kubernetes.protobuf", true},
		{"json", "application/json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.protobuf {
				events[1] = "{}" // a JSON event is never empty
			}
			body := frames(tc.protobuf, events...)
			var accept string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				accept = r.Header.Get("Accept")
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			ctx := context.Background()
			st, err := ReadStream(ctx, srv.Client(), srv.URL, "/w", tc.contentType, len(events))
			if err != nil {
				t.Fatal(err)
			}
			if st.Events != len(events) || st.Bytes != int64(len(body)) {
				t.Errorf("read %d events, %d bytes; want %d, %d", st.Events, st.Bytes, len(events), len(body))
			}
			if strings.Contains(accept, "protobuf") != tc.protobuf {
				t.Errorf("Accept %q for %s", accept, tc.contentType)
			}
			// One event more than the stream holds: it ends early.
			_, err = ReadStream(ctx, srv.Client(), srv.URL, "/w", tc.contentType, len(events)+1)
			if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "after 4 events") {
				t.Errorf("reading past the end: %v, want an unexpected EOF after 4 events", err)
			}
		})
	}
}

func TestReadStreamOfTheChild(t *testing.T) {
	for _, server := range Servers {
		t.Run(server, func(t *testing.T) { testReadStreamOfTheChild(t, server) })
	}
}

func testReadStreamOfTheChild(t *testing.T, server string) {
	p, _ := startChild(t, server)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Timeout())
	defer cancel()
	for _, ct := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		// Every pod, then the closing bookmark.
		st, err := ReadStream(ctx, nil, p.URL, WatchListQuery, ct, testPods+1)
		if err != nil {
			t.Fatalf("%s: %v", ct, err)
		}
		if st.Bytes < testPods*1000 {
			t.Errorf("%s: %d pods in %d bytes", ct, testPods, st.Bytes)
		}
	}
	before, err := p.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const updates = 7
	if _, err := p.Churn(ctx, updates, 1, 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := ReadStream(ctx, nil, p.URL, WatchFromQuery(before.ResourceVersion), "application/vnd.kubernetes.protobuf", updates)
		got <- err
	}()
	if err := p.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
