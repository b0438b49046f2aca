package cli

import (
	"errors"

	ucli "github.com/urfave/cli/v2"
)

func (h *handler) demo(_ *ucli.Context) error {
	return errors.New("demo: not built yet")
}
