package server

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestConfig_Validate_JobMaxCount(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	must.EqOp(t, 10_000, cfg.JobMaxCount)
	must.NoError(t, cfg.Validate())
	cfg.JobMaxCount = 0
	must.ErrorContains(t, cfg.Validate(), "server: job_max_count must be at least 1, got 0")
}
