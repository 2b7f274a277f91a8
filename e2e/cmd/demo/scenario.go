package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// convergeWithin bounds how long the scenario waits for the controller after each step.
const convergeWithin = 30 * time.Second

// runScenario runs the controller against the server of cfg and drives it: it creates opted-in
// namespaces with pods, and one namespace that is not opted in, then changes pod phases, deletes
// pods, tampers with a summary and opts the last namespace in. After each step it waits until
// every summary matches a fresh LIST of its namespace's pods. It prints what happens and a final
// table.
func runScenario(ctx context.Context, cfg *rest.Config, o options, p *printer) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	c, stop, err := startController(ctx, cfg, o, p)
	if err != nil {
		return err
	}
	err = drive(ctx, client, o, p)
	if stopErr := stop(); stopErr != nil {
		err = errors.Join(err, stopErr)
	}
	if err == nil {
		p.say("done: the controller wrote %d summaries; every one matched a fresh LIST of its namespace", c.Writes())
	}
	return err
}

func drive(ctx context.Context, client kubernetes.Interface, o options, p *printer) error {
	// Step 1: namespaces and pods.
	suffix := fmt.Sprintf("%04x", time.Now().UnixNano()&0xffff)
	var optedIn []string
	for i := range o.namespaces {
		ns := fmt.Sprintf("demo-%s-%d", suffix, i+1)
		if err := createNamespace(ctx, client, ns, true); err != nil {
			return err
		}
		optedIn = append(optedIn, ns)
	}
	ignored := fmt.Sprintf("demo-%s-later", suffix)
	if err := createNamespace(ctx, client, ignored, false); err != nil {
		return err
	}
	p.say("step 1: created namespaces %s (opted in) and %s (not opted in)", strings.Join(optedIn, ", "), ignored)
	for _, ns := range append(slices.Clone(optedIn), ignored) {
		for i := range o.pods {
			if err := createPod(ctx, client, ns, fmt.Sprintf("web-%d", i)); err != nil {
				return err
			}
		}
	}
	p.say("step 1: created %d pods in each of them", o.pods)
	if err := waitVerified(ctx, client, optedIn, []string{ignored}, p); err != nil {
		return err
	}

	// Step 2: pods change phase, some are deleted, and someone edits a summary by hand.
	running, deleted := 0, 0
	for _, ns := range optedIn {
		for i := 0; i < o.pods; i += 2 {
			if err := setPhase(ctx, client, ns, fmt.Sprintf("web-%d", i), corev1.PodRunning); err != nil {
				return err
			}
			running++
		}
		if o.pods > 1 {
			if err := client.CoreV1().Pods(ns).Delete(ctx, fmt.Sprintf("web-%d", o.pods-1), metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete pod: %w", err)
			}
			deleted++
		}
	}
	patch := []byte(`{"data":{"total":"999"}}`)
	if _, err := client.CoreV1().ConfigMaps(optedIn[0]).Patch(ctx, summaryName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("edit the summary of %s: %w", optedIn[0], err)
	}
	p.say("step 2: %d pods now Running, %d deleted, and %s/%s edited by hand (total: 999)", running, deleted, optedIn[0], summaryName)
	if err := waitVerified(ctx, client, optedIn, []string{ignored}, p); err != nil {
		return err
	}

	// Step 3: the last namespace opts in.
	label := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, optInLabel)
	if _, err := client.CoreV1().Namespaces().Patch(ctx, ignored, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label namespace %s: %w", ignored, err)
	}
	optedIn = append(optedIn, ignored)
	p.say("step 3: labelled %s %s=true", ignored, optInLabel)
	if err := waitVerified(ctx, client, optedIn, nil, p); err != nil {
		return err
	}
	return printTable(ctx, client, optedIn, p)
}

func createNamespace(ctx context.Context, client kubernetes.Interface, name string, optIn bool) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if optIn {
		ns.Labels = map[string]string{optInLabel: "true"}
	}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

func createPod(ctx context.Context, client kubernetes.Interface, ns, name string) error {
	_, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// setPhase sets a pod's status phase, as a kubelet would (the local server runs none).
func setPhase(ctx context.Context, client kubernetes.Interface, ns, name string, phase corev1.PodPhase) error {
	pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get pod %s/%s: %w", ns, name, err)
	}
	pod.Status.Phase = phase
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("set the phase of pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// waitVerified polls verify until it succeeds, or fails after convergeWithin.
func waitVerified(ctx context.Context, client kubernetes.Interface, optedIn, notOptedIn []string, p *printer) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, convergeWithin)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := verify(ctx, client, optedIn, notOptedIn)
		if err == nil {
			p.say("verified: the %d summaries match a fresh LIST of their pods (after %v)", len(optedIn), time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the summaries did not converge within %v: %w", convergeWithin, err)
		case <-tick.C:
		}
	}
}

// verify checks, against the server, that each namespace of optedIn has a summary matching its
// pods, and that none of notOptedIn has one.
func verify(ctx context.Context, client kubernetes.Interface, optedIn, notOptedIn []string) error {
	for _, ns := range optedIn {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods of %s: %w", ns, err)
		}
		ptrs := make([]*podPhase, len(pods.Items))
		for i := range pods.Items {
			ptrs[i] = phaseOf(&pods.Items[i])
		}
		want := summaryData(ptrs)
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, summaryName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get %s/%s: %w", ns, summaryName, err)
		}
		if !maps.Equal(cm.Data, want) {
			return fmt.Errorf("%s/%s has %v, want %v", ns, summaryName, cm.Data, want)
		}
	}
	for _, ns := range notOptedIn {
		_, err := client.CoreV1().ConfigMaps(ns).Get(ctx, summaryName, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s is not opted in, yet get %s: %v", ns, summaryName, err)
		}
	}
	return nil
}

// printTable prints each summary as the server has it.
func printTable(ctx context.Context, client kubernetes.Interface, namespaces []string, p *printer) error {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nNAMESPACE\tSUMMARY\tPODS")
	for _, ns := range namespaces {
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, summaryName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get %s/%s: %w", ns, summaryName, err)
		}
		var pods []string
		for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
			if name, ok := strings.CutPrefix(k, podKeyStart); ok {
				pods = append(pods, name+"="+cm.Data[k])
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", ns, describe(cm.Data), strings.Join(pods, " "))
	}
	w.Flush()
	p.raw(b.String() + "\n")
	return nil
}
