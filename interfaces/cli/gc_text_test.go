package cli

import (
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
)

// gc never says it reclaimed a negative size: a store that grew (re-encoding wrote more than the
// deletion freed) is said to have grown.
func TestGCTextNeverReclaimsANegativeSize(t *testing.T) {
	var b strings.Builder
	writeGC(&b, port.GCReport{BytesReclaimed: -2048, PacksDeleted: 1, LiveObjects: 3, ObjectsReencoded: 2})
	got := b.String()
	if !strings.HasPrefix(got, "Reclaimed nothing: the store grew by 2.0 KiB (1 packs deleted") || strings.Contains(got, "-2") {
		t.Errorf("%q", got)
	}
}
