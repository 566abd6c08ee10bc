package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	etcdName      = "etcd"
	apiserverName = "kube-apiserver"
	// logTailBytes bounds the log excerpt printed on failure.
	logTailBytes = 6 << 10
	// killWait bounds the wait for a killed process to be reaped.
	killWait = 30 * time.Second
)

// process is one started child. Its fields are fixed after startProcess;
// done is closed once the child has exited and been reaped, after which
// waitErr is valid.
type process struct {
	name    string
	pid     int
	done    chan struct{}
	waitErr error
}

// logFile is where the named process writes its output.
func logFile(dir, name string) string { return filepath.Join(dir, name+".log") }

// startProcess starts path with args in its own process group (dying with
// the test process on Linux), appending its output to dir/<name>.log.
func startProcess(name, path string, args []string, dir string) (*process, error) {
	if err := checkPlatform(); err != nil {
		return nil, err
	}
	logPath := logFile(dir, name)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", logPath, err)
	}
	// The child gets its own copy of the descriptor.
	defer f.Close()
	fmt.Fprintf(f, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process group and waits until the process is
// reaped. It is a no-op on a nil or already ended process.
func (p *process) kill() {
	if p == nil {
		return
	}
	if !p.exited() {
		killGroup(p.pid)
	}
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
}

// tailFile returns about the last n bytes of path, starting at a line.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	off := max(fi.Size()-n, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	s := string(data)
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
