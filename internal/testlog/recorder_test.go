package testlog

import (
	"testing"

	"github.com/shoenig/test/must"
)

func TestRecorder_KeepsEveryLevel(t *testing.T) {
	var r Recorder
	l := r.Logger("srv")
	l.Trace("deep detail", "volume", "data")
	l.Error("it broke")
	out := r.String()
	must.StrContains(t, out, "[TRACE] srv: deep detail: volume=data")
	must.StrContains(t, out, "[ERROR] srv: it broke")
}
