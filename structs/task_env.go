package structs

import (
	"regexp"
	"strings"
)

// taskEnvRef is ${NAME} in a task's command, args or entrypoint.
var taskEnvRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// InterpolateEnv replaces each ${NAME} in s that names a variable of env,
// a task's environment, with its value; anything else (a $NAME, an
// unknown name, a ${...} that is not a plain name) is left as it is, for
// the command itself: a shell script's own variables included. The task
// drivers (exec and docker) apply it to a task's command, args and
// entrypoint, and nowhere else.
func InterpolateEnv(s string, env map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return taskEnvRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// InterpolateEnvAll is InterpolateEnv of each of ss, in a new slice (nil
// when ss is empty).
func InterpolateEnvAll(ss []string, env map[string]string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = InterpolateEnv(s, env)
	}
	return out
}
