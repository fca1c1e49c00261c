package daemon

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestTheAlertRulesReadOnlySeriesTheDaemonExports(t *testing.T) {
	m := newMetrics(metricsInfo{version: "v", revision: "r", engine: "cpu", dirs: map[string]string{"spool": t.TempDir()}})
	m.duration.Observe(1)
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range fams {
		exported[f.GetName()] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[f.GetName()+suffix] = true
			}
		}
	}
	b, err := os.ReadFile("../systemd/zspool-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("zspool-alerts.yaml: %v", err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			for _, name := range regexp.MustCompile(`zspool_[a-z_]+`).FindAllString(r.Expr, -1) {
				if !exported[name] {
					t.Errorf("alert %s reads %s, which the daemon does not export", r.Alert, name)
				}
			}
			if strings.TrimSpace(r.Expr) == "" {
				t.Errorf("alert %s has no expression", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alert rules")
	}
	for _, want := range []string{"zspool_input_bytes_total", "zspool_build_info", "zspool_filesystem_free_bytes", "zspool_job_retries_total"} {
		if !exported[want] {
			t.Errorf("%s is not exported", want)
		}
	}
	if exported["zspool_bytes_in_total"] {
		t.Error("the old zspool_bytes_in_total is still exported")
	}
}
