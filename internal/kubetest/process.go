package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Process is one controller a test runs beside the apiserver (Flux's,
// Argo CD's); its stdout and stderr go to a log file.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// StartProcess starts binary with args and env added to the test's
// environment, stops it when the test ends and prints its log if the test
// failed, then waits until GET readyURL answers 200 (no wait when "").
func StartProcess(tb testing.TB, name, binary, readyURL string, env []string, args ...string) (*Process, error) {
	logf, err := os.CreateTemp("", name+"-*.log")
	if err != nil {
		return nil, err
	}
	p := &Process{name: name, logPath: logf.Name(), exited: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = p.cmd.Start()
	logf.Close()
	if err != nil {
		os.Remove(p.logPath)
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("%s log (%s):\n%s", name, p.logPath, p.Log())
		}
		os.Remove(p.logPath)
	})
	if readyURL == "" {
		return p, nil
	}
	if err := WaitHTTP(readyURL, nil, 60*time.Second, p.exited); err != nil {
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", name, err, p.Log())
	}
	return p, nil
}

// Exited is closed when the process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Log is what the process has written so far; "" for a nil process.
func (p *Process) Log() string {
	if p == nil {
		return ""
	}
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Stop ends the process as the kubelet stops a container: SIGTERM, then
// SIGKILL after 20 seconds. It returns once the process has exited.
func (p *Process) Stop() { p.stop() }

// Kill ends the process at once, as a node failure or the OOM killer
// does: it gets no SIGTERM, so nothing it does on the way out is done.
func (p *Process) Kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (p *Process) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
