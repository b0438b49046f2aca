package application

import (
	"math"

	"github.com/planhq/plan/application/port"
)

// keepOf is the --keep a policy prunes with: a policy of classes alone keeps what they do not match.
func keepOf(r port.RetentionRule) int {
	if r.Keep == 0 && r.Calendar.IsZero() {
		return math.MaxInt
	}
	return r.Keep
}
