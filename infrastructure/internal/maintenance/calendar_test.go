package maintenance_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// Calendar retention in .plan/config.yaml: keep_hourly … keep_monthly, alone or with keep, each at
// least 1; older_than goes with either.
func TestRetentionCalendar(t *testing.T) {
	cases := []struct {
		name    string
		content string
		rule    port.RetentionRule
		invalid string
	}{
		{name: "daily alone", content: "retention:\n  keep_daily: 7\n",
			rule: port.RetentionRule{Calendar: checkpoint.Calendar{Daily: 7}}},
		{name: "every rule with keep", content: "retention:\n  keep: 2\n  keep_hourly: 24\n  keep_daily: 7\n  keep_weekly: 4\n  keep_monthly: 12\n",
			rule: port.RetentionRule{Keep: 2, Calendar: checkpoint.Calendar{Hourly: 24, Daily: 7, Weekly: 4, Monthly: 12}}},
		{name: "calendar with older_than", content: "retention:\n  keep_weekly: 4\n  older_than: 48h\n",
			rule: port.RetentionRule{OlderThan: 48 * time.Hour, Calendar: checkpoint.Calendar{Weekly: 4}}},
		{name: "calendar with a bad age", content: "retention:\n  keep_weekly: 4\n  older_than: soon\n", invalid: "retention.older_than"},
		{name: "zero", content: "retention:\n  keep_daily: 0\n", invalid: "retention.keep_daily must be at least 1"},
		{name: "negative", content: "retention:\n  keep_monthly: -1\n", invalid: "retention.keep_monthly must be at least 1"},
		{name: "fractional", content: "retention:\n  keep_hourly: 1.5\n", invalid: "keep_hourly"},
		{name: "older_than alone", content: "retention:\n  older_than: 1h\n", invalid: "keep_hourly … keep_monthly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			content := c.content
			rule, ok, err := settingsWith(t, &content).Retention()
			if c.invalid != "" {
				if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.invalid) || ok {
					t.Fatalf("err = %v (ok %v), want an invalid-input error with %q", err, ok, c.invalid)
				}
				return
			}
			if err != nil || !ok || !reflect.DeepEqual(rule, c.rule) {
				t.Errorf("Retention() = %+v, %v, %v; want %+v", rule, ok, err, c.rule)
			}
		})
	}
}

// validate.command: the check plan validate runs; none configured is "".
func TestCheckCommand(t *testing.T) {
	for _, c := range []struct {
		content *string
		want    string
		invalid string
	}{
		{content: nil},
		{content: ptr("retention:\n  keep: 2\n")},
		{content: ptr("validate:\n  command: make test\n"), want: "make test"},
		{content: ptr("validate:\n  command: \"  \"\n"), invalid: "validate.command is blank"},
		{content: ptr("validate:\n  command: \"a\\0b\"\n"), invalid: "NUL"},
		{content: ptr("validate:\n  comand: x\n"), invalid: "field comand not found"},
	} {
		got, err := settingsWith(t, c.content).CheckCommand()
		if c.invalid != "" {
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), c.invalid) {
				t.Errorf("%v: err = %v, want %q", c.content, err, c.invalid)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v: %q, %v", c.content, got, err)
		}
	}
}
