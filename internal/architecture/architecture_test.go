// Package architecture holds the test that keeps zspool's package graph
// one-way: the rules below are the README's "Architecture" section, checked
// against `go list`'s import graph in both builds (with and without -tags
// cuda).
package architecture

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/zspool/zspool/"

// Groups of packages, by what they own.
var (
	stores   = []string{"s3sink", "localfs"}
	registry = "destination"
	engines  = []string{"engine", "pipeline/cpu", "kernels"}
	core     = []string{"pipeline", "zarr", "config"}
	cuda     = []string{"gorgonia.org/cu", module + "kernels"}
)

// graph maps a package (relative to the module, or a full path outside
// it) to its direct and its transitive imports.
type graph struct {
	direct, deps map[string][]string
}

// rule is one one-way rule; check returns its violations.
type rule struct {
	name  string
	check func(g graph) []string
}

func rel(p string) string { return strings.TrimPrefix(p, module) }

func within(p string, set []string) bool {
	for _, s := range set {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

var rules = []rule{
	{"pipeline, zarr and config import no store, registry, engine, daemon or CUDA package (not even through another)", func(g graph) []string {
		var bad []string
		for _, p := range core {
			for _, d := range g.deps[p] {
				if within(d, stores) || d == registry || within(d, engines) || d == "daemon" || within(d, cuda) || within(d, []string{"gorgonia.org/cu"}) {
					bad = append(bad, p+" → "+d)
				}
			}
		}
		return bad
	}},
	{"the daemon imports no store and no engine implementation: it opens stores through the registry and engines through engine", func(g graph) []string {
		var bad []string
		for _, d := range g.direct["daemon"] {
			if within(d, stores) || d == "pipeline/cpu" || d == "kernels" {
				bad = append(bad, "daemon → "+d)
			}
		}
		return bad
	}},
	{"only the registry imports a store", func(g graph) []string {
		var bad []string
		for p, imps := range g.direct {
			if p == registry || within(p, stores) {
				continue
			}
			for _, d := range imps {
				if within(d, stores) {
					bad = append(bad, p+" → "+d)
				}
			}
		}
		return bad
	}},
	{"stores import no engine, daemon or registry; engines import no store, registry or daemon", func(g graph) []string {
		var bad []string
		for p, imps := range g.direct {
			for _, d := range imps {
				switch {
				case within(p, stores) && (within(d, engines) || d == "daemon" || d == registry):
					bad = append(bad, p+" → "+d)
				case within(p, engines) && (within(d, stores) || d == registry || d == "daemon"):
					bad = append(bad, p+" → "+d)
				}
			}
		}
		return bad
	}},
	{"no arrow runs back up: only cmd imports daemon, only cmd and the daemon import engine, only engine builds a GPU engine", func(g graph) []string {
		var bad []string
		for p, imps := range g.direct {
			top := strings.HasPrefix(p, "cmd/")
			for _, d := range imps {
				switch {
				case d == "daemon" && !top:
					bad = append(bad, p+" → "+d)
				case d == "engine" && !top && p != "daemon":
					bad = append(bad, p+" → "+d)
				case (d == "pipeline/cpu" || d == "kernels") && !top && p != "engine" && !within(p, engines):
					bad = append(bad, p+" → "+d)
				}
			}
		}
		return bad
	}},
}

// load lists the module's packages (tests excluded) with their imports.
func load(t *testing.T, tags string) graph {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "github.com/zspool/zspool/...")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	g := graph{direct: map[string][]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], module) {
			continue
		}
		p := rel(parts[0])
		for _, d := range strings.Fields(parts[1]) {
			g.direct[p] = append(g.direct[p], rel(d))
		}
		for _, d := range strings.Fields(parts[2]) {
			g.deps[p] = append(g.deps[p], rel(d))
		}
	}
	if len(g.direct) < 10 {
		t.Fatalf("go list gave %d packages; is this the module root?", len(g.direct))
	}
	return g
}

func violations(g graph) []string {
	var out []string
	for _, r := range rules {
		for _, v := range r.check(g) {
			out = append(out, fmt.Sprintf("%s: %s", r.name, v))
		}
	}
	slices.Sort(out)
	return out
}

func TestThePackageGraphKeepsEveryOneWayRule(t *testing.T) {
	for _, tags := range []string{"", "cuda"} {
		t.Run("tags="+tags, func(t *testing.T) {
			for _, v := range violations(load(t, tags)) {
				t.Error(v)
			}
		})
	}
}

func TestEachRuleCatchesTheImportItForbids(t *testing.T) {
	cases := []struct {
		name     string
		from, to string
	}{
		{"config importing the S3 store", "config", "s3sink"},
		{"pipeline importing the GPU engine", "pipeline", "kernels"},
		{"zarr importing the daemon", "zarr", "daemon"},
		{"the daemon importing the S3 store", "daemon", "s3sink"},
		{"the daemon importing the CPU engine", "daemon", "pipeline/cpu"},
		{"cmd importing a store beside the registry", "cmd/zspool", "localfs"},
		{"a store importing the registry", "s3sink", "destination"},
		{"an engine importing a store", "kernels", "localfs"},
		{"the registry importing the daemon", "destination", "daemon"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := graph{
				direct: map[string][]string{c.from: {c.to}},
				deps:   map[string][]string{c.from: {c.to}},
			}
			if len(violations(g)) == 0 {
				t.Errorf("%s → %s broke no rule", c.from, c.to)
			}
		})
	}
}
