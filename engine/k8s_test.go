package engine

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"agt/config"
)

// No Kubernetes API server can run here, and kubectl create --dry-run=client needs one (to
// find the Job kind). The manifests are checked instead against the Go types of the API
// (k8s.io/api, from which the server's OpenAPI schema is generated), decoded strictly so that
// an unknown or mistyped field fails, and against apimachinery's own name, label and
// quantity rules, which the API server applies.

// decodeManifest splits a manifest into its documents and decodes each strictly.
func decodeManifest(t *testing.T, b []byte) (*batchv1.Job, *corev1.Secret) {
	t.Helper()
	var job *batchv1.Job
	var secret *corev1.Secret
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, doc)
		}
		switch head.APIVersion + " " + head.Kind {
		case "batch/v1 Job":
			job = &batchv1.Job{}
			if err := yaml.UnmarshalStrict(doc, job); err != nil {
				t.Fatalf("not a batch/v1 Job: %v\n%s", err, doc)
			}
		case "v1 Secret":
			secret = &corev1.Secret{}
			if err := yaml.UnmarshalStrict(doc, secret); err != nil {
				t.Fatalf("not a v1 Secret: %v\n%s", err, doc)
			}
		default:
			t.Fatalf("unexpected object %s %s", head.APIVersion, head.Kind)
		}
	}
	if job == nil {
		t.Fatalf("no Job in\n%s", b)
	}
	for _, msgs := range [][]string{validation.IsDNS1123Label(job.Name)} {
		for _, m := range msgs {
			t.Errorf("Job name %q: %s", job.Name, m)
		}
	}
	for _, labels := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		for k, v := range labels {
			for _, m := range append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...) {
				t.Errorf("label %s=%s: %s", k, v, m)
			}
		}
	}
	return job, secret
}

func TestManifest(t *testing.T) {
	prompt := "fix the \"login\" bug: it's in auth.go\n--- not a document ---\n#not a comment: {x: [y]}"
	e := config.Engine{Name: "k8s", Image: "registry.example.com/agents:1", Namespace: "agents",
		Memory: 2 << 30, MemoryLimit: 3 << 29, CPUs: 1.5, Labels: map[string]string{"team": "core", "example.com/cost-center": "42"},
		EnvFrom: []string{"agent-keys"}}
	j, err := SpawnJob([]string{"spawn", "--agent=claude", "--timeout=20s", "--prompt-file=-", "fix-auth", "--", "--model", "sonnet"},
		strings.NewReader(prompt), e, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Manifest(j)
	if err != nil {
		t.Fatal(err)
	}
	job, secret := decodeManifest(t, b)
	spec := job.Spec.Template.Spec
	switch {
	case job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0:
		t.Errorf("backoffLimit = %v", job.Spec.BackoffLimit)
	case spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("restartPolicy = %s", spec.RestartPolicy)
	case spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 30:
		t.Errorf("terminationGracePeriodSeconds = %v, want -t 20s and 10 s", spec.TerminationGracePeriodSeconds)
	case job.Namespace != "agents" || secret.Namespace != "agents":
		t.Errorf("namespaces %q %q", job.Namespace, secret.Namespace)
	case job.Labels[LabelAgent] != "fix-auth" || job.Labels[LabelKind] != "claude" || spec.Containers[0].Name != "agent" ||
		job.Spec.Template.Labels["example.com/cost-center"] != "42" || secret.Labels[LabelAgent] != "fix-auth":
		t.Errorf("labels %v %v %v", job.Labels, job.Spec.Template.Labels, secret.Labels)
	}
	c := spec.Containers[0]
	if strings.Join(c.Args, " ") != strings.Join(j.Command(), " ") || c.Image != e.Image {
		t.Errorf("container runs %s %q", c.Image, c.Args)
	}
	for name, want := range map[string]resource.Quantity{
		"requests.memory": resource.MustParse("2Gi"), "limits.memory": resource.MustParse("1536Mi"), "requests.cpu": resource.MustParse("1500m"),
	} {
		var got resource.Quantity
		switch name {
		case "requests.memory":
			got = c.Resources.Requests[corev1.ResourceMemory]
		case "limits.memory":
			got = c.Resources.Limits[corev1.ResourceMemory]
		default:
			got = c.Resources.Requests[corev1.ResourceCPU]
		}
		if got.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", name, got.String(), want.String())
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "agent-keys" {
		t.Errorf("envFrom = %+v", c.EnvFrom)
	}
	// The prompt: in the Secret, read by the job from the file it mounts, never in argv.
	if secret == nil || secret.StringData["prompt"] != prompt {
		t.Fatalf("the Secret holds %q", secret.StringData)
	}
	if strings.Contains(strings.Join(c.Args, " "), "login") {
		t.Error("the prompt is in the container's args")
	}
	m := c.VolumeMounts[0]
	v := spec.Volumes[0]
	if m.MountPath != PromptPath || m.SubPath != "prompt" || v.Name != m.Name || v.Secret == nil || v.Secret.SecretName != secret.Name {
		t.Errorf("mount %+v of volume %+v", m, v)
	}
}

func TestManifestPlain(t *testing.T) {
	j, err := SpawnJob([]string{"spawn", "build", "--", "sh", "-c", "make && echo 'done: yes'"}, nil, config.Engine{Name: "k8s", Image: "agents:1"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Manifest(j)
	if err != nil {
		t.Fatal(err)
	}
	job, secret := decodeManifest(t, b)
	if secret != nil || len(job.Spec.Template.Spec.Volumes) != 0 || *job.Spec.Template.Spec.TerminationGracePeriodSeconds != 40 {
		t.Errorf("a job without a prompt: %s", b)
	}
	if got := job.Spec.Template.Spec.Containers[0].Args; got[len(got)-1] != "make && echo 'done: yes'" {
		t.Errorf("args = %q", got)
	}
}

func TestK8sName(t *testing.T) {
	for _, name := range []string{"fix_auth", "fix.auth", "fix-"} {
		j := &Job{Name: name, Image: "x"}
		if _, err := Manifest(j); err == nil {
			t.Errorf("%q names a Job", name)
		}
	}
}

// FuzzManifestPrompt: whatever the prompt and the command, the manifest is a Job (and a
// Secret) that decodes strictly, with the prompt and argv as they were (invalid UTF-8
// aside, which becomes U+FFFD as in events).
func FuzzManifestPrompt(f *testing.F) {
	f.Add("fix it", "echo hi")
	f.Add("a: b\n---\n- c\x00\x1b[2J\u0085\u2028\ufeff\uffff", "#x\t'\"\\")
	f.Fuzz(func(t *testing.T, prompt, arg string) {
		if !utf8.ValidString(prompt) || !utf8.ValidString(arg) {
			return
		}
		j := &Job{Name: "fuzz", Image: "agents:1", Prompt: &prompt, Argv: []string{arg}, Engine: config.Engine{Name: "k8s"}}
		b, err := Manifest(j)
		if err != nil {
			t.Fatal(err)
		}
		job, secret := decodeManifest(t, b)
		if secret.StringData["prompt"] != prompt {
			t.Fatalf("prompt %q came back %q", prompt, secret.StringData["prompt"])
		}
		args := job.Spec.Template.Spec.Containers[0].Args
		if args[len(args)-1] != arg {
			t.Fatalf("arg %q came back %q", arg, args[len(args)-1])
		}
	})
}
