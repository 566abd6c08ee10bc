package deltafifo

// Segments returns the number of segments queued: Pop blocks iff it is 0.
func Segments(q *Queue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.segs)
}
