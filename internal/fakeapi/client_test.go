package fakeapi

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/warmcache/warmcache/internal/podgen"
	"github.com/warmcache/warmcache/internal/testkit"
)

func TestListMatchesTheSource(t *testing.T) {
	for _, ct := range contentTypes {
		t.Run(ct.name, func(t *testing.T) {
			src := newSource(t, testPods)
			s := startServer(t, Options{Source: src})
			rec := &contentTypeRecorder{}
			cs := clientset(t, s, ct.contentType, rec)
			ctx := context.Background()

			list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != testPods || list.ResourceVersion != src.ResourceVersion() {
				t.Fatalf("list: %d pods at RV %s, want %d at %s", len(list.Items), list.ResourceVersion, testPods, src.ResourceVersion())
			}
			for _, got := range list.Items {
				want, ok := src.Get(podGVK, got.Namespace, got.Name)
				if !ok {
					t.Fatalf("listed pod %s/%s is not in the source", got.Namespace, got.Name)
				}
				wantPod := want.(*corev1.Pod)
				wantPod.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
				if !apiequality.Semantic.DeepEqual(&got, wantPod) {
					t.Fatalf("listed pod %s/%s differs from the source's", got.Namespace, got.Name)
				}
			}
			if !rec.saw(ct.wantList) {
				t.Errorf("no response with Content-Type %q; saw %v", ct.wantList, rec.types)
			}

			ns := podgen.Pod(3).Namespace
			inNS, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := testPods / podgen.Namespaces; len(inNS.Items) < want || len(inNS.Items) > want+1 {
				t.Errorf("namespace %s: %d pods", ns, len(inNS.Items))
			}
			for _, p := range inNS.Items {
				if p.Namespace != ns {
					t.Errorf("namespaced list returned a pod of %s", p.Namespace)
				}
			}

			front, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "tier=frontend"})
			if err != nil {
				t.Fatal(err)
			}
			if len(front.Items) != testPods/3 {
				t.Errorf("tier=frontend: %d pods, want %d", len(front.Items), testPods/3)
			}
			for _, p := range front.Items {
				if p.Labels["tier"] != "frontend" {
					t.Errorf("label selector returned a %s pod", p.Labels["tier"])
				}
			}

			one, err := cs.CoreV1().Pods(list.Items[0].Namespace).Get(ctx, list.Items[0].Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if one.UID != list.Items[0].UID {
				t.Errorf("Get returned %s, want %s", one.UID, list.Items[0].UID)
			}
		})
	}
}

func TestPaginationServesOneSnapshot(t *testing.T) {
	for _, ct := range contentTypes {
		t.Run(ct.name, func(t *testing.T) {
			src := newSource(t, testPods)
			s := startServer(t, Options{Source: src})
			cs := clientset(t, s, ct.contentType, nil)
			ctx := context.Background()

			seen := map[string]bool{}
			opts := metav1.ListOptions{Limit: 25}
			var snapshot string
			pages := 0
			for {
				page, err := cs.CoreV1().Pods("").List(ctx, opts)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				if snapshot == "" {
					snapshot = page.ResourceVersion
					// Changes after the first page are not in the
					// snapshot the next pages come from.
					if _, err := src.Add(podgen.Pod(testPods)); err != nil {
						t.Fatal(err)
					}
				} else if page.ResourceVersion != snapshot {
					t.Errorf("page %d at RV %s, first page at %s", pages, page.ResourceVersion, snapshot)
				}
				for _, p := range page.Items {
					key := p.Namespace + "/" + p.Name
					if seen[key] {
						t.Errorf("%s listed twice", key)
					}
					seen[key] = true
				}
				if page.Continue == "" {
					break
				}
				if len(page.Items) != 25 {
					t.Errorf("page %d has %d items, want 25", pages, len(page.Items))
				}
				opts = metav1.ListOptions{Limit: 25, Continue: page.Continue}
			}
			if pages != 3 || len(seen) != testPods {
				t.Errorf("%d pages, %d pods; want 3 pages, %d pods", pages, len(seen), testPods)
			}

			_, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 5, Continue: "not-a-token"})
			if !apierrors.IsBadRequest(err) {
				t.Errorf("bad continue token: %v, want 400 BadRequest", err)
			}
		})
	}
}

func TestWatchSeesChangesAndBookmarks(t *testing.T) {
	for _, ct := range contentTypes {
		t.Run(ct.name, func(t *testing.T) {
			src := newSource(t, testPods)
			s := startServer(t, Options{Source: src})
			rec := &contentTypeRecorder{}
			cs := clientset(t, s, ct.contentType, rec)
			ctx := context.Background()

			start := src.ResourceVersion()
			w, err := cs.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{ResourceVersion: start, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			added := podgen.Pod(testPods)
			addRV, err := src.Add(added)
			if err != nil {
				t.Fatal(err)
			}
			updated := podgen.Pod(1)
			updated.Labels["tier"] = "changed"
			updRV, err := src.Update(updated)
			if err != nil {
				t.Fatal(err)
			}
			delRV, err := src.Delete(podgen.Pod(2))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []struct {
				typ  watch.EventType
				name string
				rv   string
			}{
				{watch.Added, added.Name, addRV},
				{watch.Modified, updated.Name, updRV},
				{watch.Deleted, podgen.Pod(2).Name, delRV},
			} {
				ev := testkit.Recv(t, w)
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type != want.typ || p.Name != want.name || p.ResourceVersion != want.rv {
					t.Fatalf("event %s %T, want %s of %s at RV %s", ev.Type, ev.Object, want.typ, want.name, want.rv)
				}
				if want.typ == watch.Modified && p.Labels["tier"] != "changed" {
					t.Errorf("modified pod carries tier=%s", p.Labels["tier"])
				}
			}

			if n := src.SendBookmark(); n != 1 {
				t.Fatalf("SendBookmark asked %d watches, want 1", n)
			}
			ev := testkit.Recv(t, w)
			if p, ok := ev.Object.(*corev1.Pod); ev.Type != watch.Bookmark || !ok || p.ResourceVersion != delRV {
				t.Fatalf("event %s %T, want a bookmark at RV %s", ev.Type, ev.Object, delRV)
			}
			if !rec.saw(ct.wantWatch) {
				t.Errorf("no response with Content-Type %q; saw %v", ct.wantWatch, rec.types)
			}
		})
	}
}

func TestWatchList(t *testing.T) {
	for _, ct := range contentTypes {
		t.Run(ct.name, func(t *testing.T) {
			src := newSource(t, testPods)
			s := startServer(t, Options{Source: src})
			cs := clientset(t, s, ct.contentType, nil)
			w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{
				SendInitialEvents:    ptr.To(true),
				ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				AllowWatchBookmarks:  true,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for i := range testPods {
				if ev := testkit.Recv(t, w); ev.Type != watch.Added {
					t.Fatalf("initial event %d is %s", i, ev.Type)
				}
			}
			ev := testkit.Recv(t, w)
			p, ok := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Bookmark || !ok || p.Annotations[metav1.InitialEventsAnnotationKey] != "true" ||
				p.ResourceVersion != src.ResourceVersion() {
				t.Fatalf("after the initial events: %s %T, want the initial-events-end bookmark", ev.Type, ev.Object)
			}
		})
	}
}

func TestWatchFromCompactedRV(t *testing.T) {
	for _, ct := range contentTypes {
		t.Run(ct.name, func(t *testing.T) {
			src := newSource(t, 3)
			if err := src.Compact(src.ResourceVersion()); err != nil {
				t.Fatal(err)
			}
			s := startServer(t, Options{Source: src})
			cs := clientset(t, s, ct.contentType, nil)
			w, err := cs.CoreV1().Pods("").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			ev := testkit.Recv(t, w)
			if ev.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) {
				t.Fatalf("event %s %v, want a 410 Expired ERROR event", ev.Type, ev.Object)
			}
			if _, open := <-w.ResultChan(); open {
				t.Error("watch still open after the ERROR event")
			}

			_, err = cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{
				ResourceVersion: "1", ResourceVersionMatch: metav1.ResourceVersionMatchExact,
			})
			if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
				t.Errorf("list at a compacted RV: %v, want 410", err)
			}
			// kube-apiserver answers 504 with Retry-After, which client-go
			// retries ten times; ask once.
			err = cs.CoreV1().RESTClient().Get().Resource("pods").
				Param("resourceVersion", strconv.Itoa(1<<30)).MaxRetries(0).Do(context.Background()).Error()
			if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
				t.Errorf("list ahead of the server: %v, want 504 with cause ResourceVersionTooLarge", err)
			}
		})
	}
}
