// Command argocd is the part of Argo CD's multi-call binary that the tests
// run, chosen by the name it is called by (a symlink), as Argo CD's own
// cmd/main.go chooses: the application-controller, the repo-server and the
// git askpass helper the repo-server hands to git. Argo CD's other
// commands (API server, CLI, Dex, notifications, ApplicationSets) are left
// out so that a cold build compiles only what the tests start.
//
// "argocd-redis" is not Argo CD's: it serves miniredis (the in-process
// Redis Argo CD's own tests use) on --addr, standing in for the Redis both
// Argo CD components cache in.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/alicebob/miniredis/v2"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	appcontroller "github.com/argoproj/argo-cd/v3/cmd/argocd-application-controller/commands"
	gitaskpass "github.com/argoproj/argo-cd/v3/cmd/argocd-git-ask-pass/commands"
	reposerver "github.com/argoproj/argo-cd/v3/cmd/argocd-repo-server/commands"
	"github.com/argoproj/argo-cd/v3/util/log"
)

func init() {
	// As Argo CD's main does: klog through Argo CD's configured logger.
	klog.SetLogger(log.NewLogrusLogger(log.NewWithCurrentConfig()))
}

func main() {
	name := filepath.Base(os.Args[0])
	if v := os.Getenv("ARGOCD_BINARY_NAME"); v != "" {
		name = v
	}
	var cmd *cobra.Command
	switch name {
	case "argocd-application-controller":
		cmd = appcontroller.NewCommand()
	case "argocd-repo-server":
		cmd = reposerver.NewCommand()
	case "argocd-git-ask-pass":
		cmd = gitaskpass.NewCommand()
	case "argocd-redis":
		cmd = redisCommand()
	default:
		fmt.Fprintf(os.Stderr, "argocd: called as %q; want argocd-application-controller, argocd-repo-server, argocd-git-ask-pass or argocd-redis\n", name)
		os.Exit(2)
	}
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

func redisCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "argocd-redis",
		Short: "Serve miniredis on --addr until SIGTERM or SIGINT",
		RunE: func(*cobra.Command, []string) error {
			s := miniredis.NewMiniRedis()
			if err := s.StartAddr(addr); err != nil {
				return err
			}
			defer s.Close()
			fmt.Println("ready " + s.Addr())
			stop := make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
			<-stop
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:6379", "address to listen on")
	return cmd
}
