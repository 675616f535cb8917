// Decodes every manifest under deploy/ into the real Kubernetes API types with
// unknown fields refused (what the API server's strict field validation does),
// and checks the promises the manifests make: the checkpoint doctor mounts the
// node's device-plugin directory read-only and nothing else of the host; the
// conformance Job mounts nothing of the host at all.
package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

func deployDir(t *testing.T) string {
	if d := os.Getenv("DEVMGR_SOURCE_DIR"); d != "" {
		return filepath.Join(d, "deploy")
	}
	return filepath.Join("..", "..", "deploy")
}

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(raw, []byte("\n---\n")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// strict decodes as the API server's strict field validation does: duplicate
// keys and unknown fields are errors, and field names match case-sensitively
// (encoding/json alone would take "readonly" for "readOnly").
func strict(t *testing.T, doc []byte, into interface{}) {
	t.Helper()
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	strictErrs, err := kjson.UnmarshalStrict(j, into)
	if err != nil {
		t.Fatalf("decode into %T: %v", into, err)
	}
	for _, e := range strictErrs {
		t.Errorf("strict decode into %T: %v", into, e)
	}
}

func kindOf(t *testing.T, doc []byte) string {
	var tm struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatal(err)
	}
	return tm.Kind
}

func TestCheckpointDoctorDaemonSet(t *testing.T) {
	var ds *appsv1.DaemonSet
	for _, doc := range documents(t, filepath.Join(deployDir(t), "checkpoint-doctor.yaml")) {
		switch k := kindOf(t, doc); k {
		case "Namespace":
			strict(t, doc, &corev1.Namespace{})
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			strict(t, doc, ds)
		default:
			t.Fatalf("unexpected kind %q", k)
		}
	}
	if ds == nil {
		t.Fatal("no DaemonSet")
	}
	spec := ds.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	hostVolumes := map[string]string{}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			hostVolumes[v.Name] = v.HostPath.Path
		}
	}
	if len(hostVolumes) != 1 || hostVolumes["device-plugins"] != "/var/lib/kubelet/device-plugins" {
		t.Fatalf("host volumes = %v, want only the device-plugin directory", hostVolumes)
	}
	for _, m := range c.VolumeMounts {
		if _, host := hostVolumes[m.Name]; host && !m.ReadOnly {
			t.Errorf("host volume %q is mounted read-write", m.Name)
		}
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil ||
		!*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the doctor's root filesystem should be read-only")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("readiness must follow the verdict (/readyz)")
	}
	if strings.Join(c.Command[:3], " ") != "devmgr checkpoint doctor" {
		t.Errorf("command = %v", c.Command)
	}
}

func TestConformanceJob(t *testing.T) {
	checkConformanceJob(t, "conformance-job.yaml", "")
	checkConformanceJob(t, "dra-conformance-job.yaml", "--dra")
}

// checkConformanceJob checks one conformance Job manifest; its command must
// contain `flag` too when not empty.
func checkConformanceJob(t *testing.T, name, flag string) {
	docs := documents(t, filepath.Join(deployDir(t), name))
	if len(docs) != 1 {
		t.Fatalf("want one document, got %d", len(docs))
	}
	job := &batchv1.Job{}
	strict(t, docs[0], job)
	spec := job.Spec.Template.Spec
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %q mounts the host (%s): the Job must not touch the node", v.Name, v.HostPath.Path)
		}
		if v.EmptyDir == nil {
			t.Errorf("volume %q is not an emptyDir", v.Name)
		}
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q", spec.RestartPolicy)
	}
	c := spec.Containers[0]
	if !strings.Contains(strings.Join(c.Command, " "), "--private-mount") {
		t.Errorf("%s: the conformance container should use --private-mount", name)
	}
	if flag != "" && !strings.Contains(strings.Join(c.Command, " "), flag) {
		t.Errorf("%s: the command lacks %s", name, flag)
	}
}

// The sonobuoy plugin definition: sonobuoy-config plus a core/v1 Container.
type sonobuoyPlugin struct {
	Config struct {
		Driver       string `json:"driver"`
		PluginName   string `json:"plugin-name"`
		ResultFormat string `json:"result-format"`
		Description  string `json:"description"`
	} `json:"sonobuoy-config"`
	Spec corev1.Container `json:"spec"`
}

func TestSonobuoyPlugin(t *testing.T) {
	checkSonobuoyPlugin(t, "sonobuoy-plugin.yaml", "")
	checkSonobuoyPlugin(t, "sonobuoy-dra-plugin.yaml", "--dra")
}

// checkSonobuoyPlugin checks one sonobuoy plugin definition; its command must
// contain `flag` too when not empty.
func checkSonobuoyPlugin(t *testing.T, name, flag string) {
	docs := documents(t, filepath.Join(deployDir(t), name))
	if len(docs) != 1 {
		t.Fatalf("want one document, got %d", len(docs))
	}
	var p sonobuoyPlugin
	strict(t, docs[0], &p)
	if p.Config.Driver != "Job" && p.Config.Driver != "DaemonSet" {
		t.Errorf("driver = %q", p.Config.Driver)
	}
	if p.Config.ResultFormat != "junit" {
		t.Errorf("result-format = %q, devmgr writes JUnit", p.Config.ResultFormat)
	}
	args := strings.Join(p.Spec.Command, " ")
	if !strings.Contains(args, "--results-dir /tmp/sonobuoy/results") {
		t.Errorf("%s: command %q must write sonobuoy's results directory", name, args)
	}
	if flag != "" && !strings.Contains(args, flag) {
		t.Errorf("%s: command %q lacks %s", name, args, flag)
	}
}
