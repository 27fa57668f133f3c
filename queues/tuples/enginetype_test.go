package tuples

import (
	"context"
	"errors"
	"testing"

	"github.com/tavernhq/tavern/docstore"
)

// TestEngineTypes checks that the plain tuple operations refuse token
// slots and reservations (their rules would be skipped), and that the
// token rules still write and take them.
func TestEngineTypes(t *testing.T) {
	sp := newSpace(t, SpaceOptions{})
	if _, err := sp.InitToken("gpu", 1); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{TokenType, ReservationType} {
		if _, err := sp.Out(typ, []docstore.Field{{Key: "token", Value: "gpu"}}, OutOptions{}); !errors.Is(err, ErrEngineType) {
			t.Errorf("Out(%s) = %v, want ErrEngineType", typ, err)
		}
		if _, err := sp.Inp(typ, nil); !errors.Is(err, ErrEngineType) {
			t.Errorf("Inp(%s) = %v, want ErrEngineType", typ, err)
		}
		if _, err := sp.In(context.Background(), typ, nil); !errors.Is(err, ErrEngineType) {
			t.Errorf("In(%s) = %v, want ErrEngineType", typ, err)
		}
	}
	slots, err := sp.TokenSlots("gpu")
	if err != nil || len(slots) != 1 {
		t.Fatalf("TokenSlots(gpu) = %d slots, %v; want 1", len(slots), err)
	}
	tok, err := sp.TryAcquire("gpu", AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Out("job", nil, OutOptions{}); err != nil {
		t.Errorf("Out(job) = %v", err)
	}
}
