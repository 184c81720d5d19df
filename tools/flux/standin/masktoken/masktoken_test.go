package masktoken

import "testing"

func TestMaskTokenFromString(t *testing.T) {
	got, err := MaskTokenFromString(`label "s3cr3t" too long; s3cr3t again`, "s3cr3t")
	if err != nil {
		t.Fatal(err)
	}
	if want := `label "*****" too long; ***** again`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := MaskTokenFromString("msg", ""); err == nil {
		t.Error("an empty token must be an error")
	}
}
