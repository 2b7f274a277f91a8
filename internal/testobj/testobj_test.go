package testobj

import (
	"encoding/json"
	"testing"
)

func TestBenchPodSize(t *testing.T) {
	b, err := json.Marshal(BenchPod(12345, 100))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b); n < 1300 || n > 1800 {
		t.Errorf("BenchPod is %d bytes of JSON, want about 1.5 KB", n)
	}
}
