package acr

import (
	"errors"
	"testing"
)

func TestGetCredentialsFails(t *testing.T) {
	c, err := NewClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetCredentials("example.cr.aliyuncs.com", nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("got %v, want ErrUnsupported", err)
	}
}
