package scalebench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"

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
	exe, specEnv, err := childEnv(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), env...), specEnv)
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

// childEnv returns this executable and the entry of the environment that
// makes it the child of spec (see MaybeRun).
func childEnv(spec childSpec) (exe, env string, err error) {
	exe, err = os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("scalebench: find own executable: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", "", err
	}
	return exe, envChild + "=" + string(b), nil
}

// startServer starts a server child, an apiproc child serving genserver's
// resources, and waits until it serves.
func startServer(ctx context.Context, spec childSpec, stderr io.Writer) (*apiproc.Process, error) {
	spec.Role = roleServer
	exe, env, err := childEnv(spec)
	if err != nil {
		return nil, err
	}
	// The server has no memory limit, whatever this process has.
	return apiproc.StartChild(ctx, exe, []string{"GOMEMLIMIT=off", env}, stderr)
}

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
