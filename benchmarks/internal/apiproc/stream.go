package apiproc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// WatchListQuery is the query of a WatchList of pods, as client-go's
// reflector asks for one: every pod as ADDED, then a bookmark.
const WatchListQuery = "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

// WatchFromQuery returns the query of a watch of pods from resourceVersion
// rv: every change after it.
func WatchFromQuery(rv string) string { return "/api/v1/pods?watch=true&resourceVersion=" + rv }

// Stream is what ReadStream read.
type Stream struct {
	// Events is the number of events read.
	Events int
	// Bytes counts the frames' bytes, framing included.
	Bytes int64
	// Elapsed runs from the request to the last event read.
	Elapsed time.Duration
}

// ReadStream gets the watch at base+query with hc (http.DefaultClient if
// nil) in contentType (application/json or protobuf), reads events events
// from it and closes it. It only splits the frames (a 4-byte big-endian
// length for protobuf, a line for JSON) and decodes nothing: what serving
// the stream costs the server, without a client taking the events.
func ReadStream(ctx context.Context, hc *http.Client, base, query, contentType string, events int) (Stream, error) {
	var st Stream
	if hc == nil {
		hc = http.DefaultClient
	}
	protobuf := strings.Contains(contentType, "protobuf")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+query, nil)
	if err != nil {
		return st, fmt.Errorf("%w: read stream: %w", ErrServer, err)
	}
	accept := "application/json"
	if protobuf {
		accept = "application/vnd.kubernetes.protobuf;stream=watch"
	}
	req.Header.Set("Accept", accept)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return st, fmt.Errorf("%w: read stream: %w", ErrServer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%w: read stream: %s", ErrServer, resp.Status)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	var hdr [4]byte
	for st.Events < events {
		var n int64
		if protobuf {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return st, streamErr(st, err)
			}
			size := int64(binary.BigEndian.Uint32(hdr[:]))
			m, err := br.Discard(int(size))
			if err != nil {
				return st, streamErr(st, err)
			}
			n = 4 + int64(m)
		} else {
			for {
				line, err := br.ReadSlice('\n')
				n += int64(len(line))
				if err == nil {
					break
				}
				if !errors.Is(err, bufio.ErrBufferFull) {
					return st, streamErr(st, err)
				}
			}
		}
		st.Bytes += n
		st.Events++
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

func streamErr(st Stream, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: read stream: after %d events: %w", ErrServer, st.Events, err)
}
