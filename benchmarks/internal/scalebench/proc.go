package scalebench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/warmcache/warmcache/benchmarks/internal/apiproc"
)

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startChild starts this executable again as the child of spec, with env
// added to its environment; its standard output goes to stdout and its
// standard error to stderr.
func startChild(spec childSpec, env []string, stdout, stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("scalebench: find own executable: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), env...), envChild+"="+string(b))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scalebench: start %s child: %w", spec.Role, err)
	}
	return &child{cmd: cmd, stdin: stdin}, nil
}

// serverProc is a running server child.
type serverProc struct {
	*child
	URL    string
	waited chan struct{}
}

// startServer starts a server child and waits until it serves.
func startServer(ctx context.Context, spec childSpec, stderr io.Writer) (*serverProc, error) {
	spec.Role = roleServer
	pr, pw := io.Pipe()
	// The server has no memory limit, whatever this process has.
	c, err := startChild(spec, []string{"GOMEMLIMIT=off"}, pw, stderr)
	if err != nil {
		return nil, err
	}
	s := &serverProc{child: c, waited: make(chan struct{})}
	urlc := apiproc.ReadURL(pr)
	go func() {
		_ = c.cmd.Wait()
		pw.Close()
		close(s.waited)
	}()
	select {
	case u := <-urlc:
		if !strings.HasPrefix(u, "http://") {
			s.Close()
			return nil, fmt.Errorf("scalebench: the server did not start (said %q)", u)
		}
		s.URL = u
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, ctx.Err()
	}
}

// Close stops the server child (closing its input) and waits for it.
func (s *serverProc) Close() {
	_ = s.stdin.Close()
	select {
	case <-s.waited:
	case <-time.After(closeTimeout):
		_ = s.cmd.Process.Kill()
		<-s.waited
	}
}

// closeTimeout is how long Close waits for the server to exit after its
// input closed before it kills it.
const closeTimeout = 10 * time.Second

// runInformer runs an informer child to its end and returns the phases it
// reported.
func runInformer(ctx context.Context, spec childSpec, env []string, stderr io.Writer) ([]Phase, error) {
	spec.Role = roleInformer
	pr, pw := io.Pipe()
	c, err := startChild(spec, env, pw, stderr)
	if err != nil {
		return nil, err
	}
	_ = c.stdin.Close()
	done := make(chan error, 1)
	go func() {
		err := c.cmd.Wait()
		pw.Close()
		done <- err
	}()
	var phases []Phase
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var p Phase
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			fmt.Fprintf(stderr, "scalebench: child output: %s\n", sc.Text())
			continue
		}
		phases = append(phases, p)
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		err = <-done
	}
	if err != nil {
		return phases, fmt.Errorf("scalebench: %s %s child: %w", spec.Impl, spec.Mode, err)
	}
	return phases, nil
}
