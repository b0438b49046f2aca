package application

import (
	"math"

	"github.com/planhq/plan/domain/checkpoint"
)

// Calendar is calendar retention (checkpoint.Calendar: restic's --keep-hourly/daily/weekly/monthly).
type Calendar = checkpoint.Calendar

// keep is the --keep a policy prunes with: a policy of classes alone keeps what they do not match.
func (r RetentionRule) keep() int {
	if r.Keep == 0 && r.Calendar.IsZero() {
		return math.MaxInt
	}
	return r.Keep
}
