package widget

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sample returns the i-th Widget the benchmarks and memory checks create: labels and an
// annotation, about 400 bytes of JSON.
func Sample(i int) *Widget {
	return &Widget{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("widget-%05d", i),
			Labels: map[string]string{
				"app": "bench", "tier": []string{"web", "api", "db"}[i%3], "shard": fmt.Sprint(i % 16),
			},
			Annotations: map[string]string{"bench.typedkube.io/owner": "team-" + fmt.Sprint(i%8)},
		},
		Spec: WidgetSpec{Color: []string{"red", "green", "blue"}[i%3], Size: int64(i)},
	}
}
