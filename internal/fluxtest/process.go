package fluxtest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/kubetest"
)

// proc is one controller process; its stdout and stderr go to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// startProc starts binary with args and env added to the test's
// environment, stops it when the test ends and prints its log if the test
// failed, then waits until GET http://healthAddr/readyz says ok.
func startProc(tb testing.TB, name, binary, healthAddr string, env []string, args ...string) (*proc, error) {
	logf, err := os.CreateTemp("", name+"-*.log")
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, logPath: logf.Name(), exited: make(chan struct{})}
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
			tb.Logf("%s log (%s):\n%s", name, p.logPath, p.log())
		}
		os.Remove(p.logPath)
	})
	if err := kubetest.WaitHTTP("http://"+healthAddr+"/readyz", nil, 60*time.Second, p.exited); err != nil {
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", name, err, p.log())
	}
	return p, nil
}

func (p *proc) log() string {
	if p == nil {
		return ""
	}
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

func (p *proc) stop() {
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
