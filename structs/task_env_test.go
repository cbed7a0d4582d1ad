package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestInterpolateEnv: ${NAME} of the environment is replaced; a $NAME, an
// unknown name, an unclosed or not plain ${...} is left for the command.
func TestInterpolateEnv(t *testing.T) {
	env := map[string]string{"ZONE": "z1", "BERTH_NODE_NAME": "n1", "EMPTY": "", "_x1": "under"}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"", ""},
		{"${BERTH_NODE_NAME}/${ZONE}", "n1/z1"},
		{"--dir=${ZONE}/pg", "--dir=z1/pg"},
		{"${ZONE}${ZONE}", "z1z1"},
		{"[${EMPTY}]", "[]"},
		{"${_x1}", "under"},
		{"$ZONE", "$ZONE"},
		{"${UNSET}", "${UNSET}"},
		{"${ZONE", "${ZONE"},
		{"${1ZONE}", "${1ZONE}"},
		{"${attr.zone}", "${attr.zone}"},
		{"${ ZONE }", "${ ZONE }"},
		{"$${ZONE}", "$z1"},
		{"${${ZONE}}", "${z1}"},
	} {
		must.Eq(t, tc.want, InterpolateEnv(tc.in, env), must.Sprintf("%q", tc.in))
	}
	must.Eq(t, "${ZONE}", InterpolateEnv("${ZONE}", nil), must.Sprint("no environment: left as it is"))
}

func TestInterpolateEnvAll(t *testing.T) {
	env := map[string]string{"A": "1"}
	in := []string{"${A}", "$A", "${B}"}
	must.Eq(t, []string{"1", "$A", "${B}"}, InterpolateEnvAll(in, env))
	must.Eq(t, []string{"${A}", "$A", "${B}"}, in, must.Sprint("the input is not changed"))
	must.Nil(t, InterpolateEnvAll(nil, env))
	must.Nil(t, InterpolateEnvAll([]string{}, env))
}
