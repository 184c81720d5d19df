package bot

import (
	"os"
	"sync"
	"testing"

	"github.com/driftback/driftback/internal/kubetest"
)

// One apiserver for the bot's tests that need a real one, started by the
// first of them.
var (
	apiOnce sync.Once
	api     *kubetest.Env
	apiErr  error
)

func apiserver(tb testing.TB) *kubetest.Env {
	tb.Helper()
	assets := kubetest.Assets(tb)
	apiOnce.Do(func() { api, apiErr = kubetest.Start(assets) })
	if apiErr != nil {
		tb.Fatal(apiErr)
	}
	return api
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(botChildEnv); cfg != "" {
		os.Exit(botChild(cfg))
	}
	code := m.Run()
	if api != nil {
		api.Stop()
	}
	os.Exit(code)
}
