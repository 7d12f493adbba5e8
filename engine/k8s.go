package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"agt/config"
	"agt/hosts"
	"agt/stream"
)

// K8s is Kubernetes as a place. agt does not talk to a Kubernetes API: agt spawn --on k8s
// --dry-run prints the Job (Manifest) for kubectl, and every command answers with the kubectl
// that does it (docs/engines.md).
type K8s struct{}

// Name is "k8s".
func (K8s) Name() string { return config.EngineK8s }

// Run refuses: kubectl runs Jobs, agt writes them.
func (k K8s) Run(_ context.Context, call *hosts.Call) error {
	verb := "that"
	if len(call.Args) > 0 {
		verb = "agt " + call.Args[0]
	}
	return refuse(call, k.Name(), fmt.Sprintf("%s does not reach Kubernetes: agt writes Jobs, kubectl runs them\nhint: 'agt spawn --on k8s --dry-run NAME -- COMMAND | kubectl create -f -'; docs/engines.md gives kubectl's ps, logs and stop", verb))
}

// K8sName checks that an agent's name can name a Job: a DNS label (no '_', a letter or digit
// at the end).
func K8sName(name string) error {
	ok := name != "" && len(name) <= 63
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(name)-1
	}
	if !ok {
		return fmt.Errorf("a Kubernetes Job's name is a DNS label (a-z 0-9 -, a letter or digit at each end): %q is not one", name)
	}
	return nil
}

// Manifest is job j as Kubernetes objects, for kubectl create -f -: a Job that runs the
// engine contract's agt spawn once (backoffLimit 0, restartPolicy Never) with the engine's
// grace, and, when there is a prompt, the Secret it reads it from. Every string is quoted,
// so that no value of the user's is read as YAML.
func Manifest(j *Job) ([]byte, error) {
	if err := K8sName(j.Name); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	labels := j.Labels()
	meta := func(indent, name string, withNS bool) {
		fmt.Fprintf(&b, "%smetadata:\n", indent)
		if name != "" {
			fmt.Fprintf(&b, "%s  name: %s\n", indent, yamlString(name))
		}
		if withNS && j.Engine.Namespace != "" {
			fmt.Fprintf(&b, "%s  namespace: %s\n", indent, yamlString(j.Engine.Namespace))
		}
		fmt.Fprintf(&b, "%s  labels:\n", indent)
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s    %s: %s\n", indent, yamlString(k), yamlString(labels[k]))
		}
	}
	secret := j.Name + "-prompt"
	if j.secretPrompt() {
		b.WriteString("apiVersion: v1\nkind: Secret\n")
		meta("", secret, true)
		fmt.Fprintf(&b, "type: Opaque\nstringData:\n  prompt: %s\n---\n", yamlString(*j.Prompt))
	}
	b.WriteString("apiVersion: batch/v1\nkind: Job\n")
	meta("", j.Name, true)
	b.WriteString("spec:\n  backoffLimit: 0\n  template:\n")
	meta("    ", "", false)
	grace := int64(math.Ceil(j.EngineGrace().Seconds()))
	fmt.Fprintf(&b, "    spec:\n      restartPolicy: Never\n      terminationGracePeriodSeconds: %d\n", grace)
	fmt.Fprintf(&b, "      containers:\n        - name: agent\n          image: %s\n          args:\n", yamlString(j.Image))
	for _, a := range j.Command() {
		fmt.Fprintf(&b, "            - %s\n", yamlString(a))
	}
	e := j.Engine
	if e.Memory > 0 || e.MemoryLimit > 0 || e.CPUs > 0 {
		b.WriteString("          resources:\n")
		if e.Memory > 0 || e.CPUs > 0 {
			b.WriteString("            requests:\n")
			if e.Memory > 0 {
				fmt.Fprintf(&b, "              memory: %s\n", yamlString(quantity(e.Memory)))
			}
			if e.CPUs > 0 {
				fmt.Fprintf(&b, "              cpu: %s\n", yamlString(strconv.FormatInt(int64(math.Round(e.CPUs*1000)), 10)+"m"))
			}
		}
		if e.MemoryLimit > 0 {
			fmt.Fprintf(&b, "            limits:\n              memory: %s\n", yamlString(quantity(e.MemoryLimit)))
		}
	}
	if len(e.EnvFrom) > 0 {
		b.WriteString("          envFrom:\n")
		for _, s := range e.EnvFrom {
			fmt.Fprintf(&b, "            - secretRef:\n                name: %s\n", yamlString(s))
		}
	}
	if j.secretPrompt() {
		fmt.Fprintf(&b, "          volumeMounts:\n            - name: prompt\n              mountPath: %s\n              subPath: prompt\n              readOnly: true\n", yamlString(PromptPath))
		fmt.Fprintf(&b, "      volumes:\n        - name: prompt\n          secret:\n            secretName: %s\n            defaultMode: 256\n", yamlString(secret))
	}
	return b.Bytes(), nil
}

// quantity writes bytes as a Kubernetes quantity: in Gi, Mi or Ki when it is a whole number
// of them.
func quantity(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// yamlString quotes s as a YAML double-quoted scalar: a JSON string (every control character,
// DEL and C1 escaped), with the few characters YAML does not print escaped too.
func yamlString(s string) string {
	out := stream.AppendString(nil, s)
	for _, r := range []struct{ raw, esc string }{{"\uFFFE", `\ufffe`}, {"\uFFFF", `\uffff`}, {"\uFEFF", `\ufeff`}} {
		out = bytes.ReplaceAll(out, []byte(r.raw), []byte(r.esc))
	}
	return string(out)
}
