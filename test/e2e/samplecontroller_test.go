package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// sampleController is kubernetes' sample-controller with its Foo type
// replaced by a built-in: a "foo" is a ConfigMap with the keys
// deploymentName and replicas, and the controller keeps a Deployment of
// that name and size owned by it, reporting the size it saw in the foo's
// status annotation. It is written against client-go's
// informers.SharedInformerFactory only, as controllers are: nothing in it
// knows warmcache.
type sampleController struct {
	client            kubernetes.Interface
	foosLister        corelisters.ConfigMapLister
	foosSynced        cache.InformerSynced
	deploymentsLister appslisters.DeploymentLister
	deploymentsSynced cache.InformerSynced
	queue             workqueue.TypedRateLimitingInterface[cache.ObjectName]
}

const (
	fooDeploymentKey = "deploymentName"
	fooReplicasKey   = "replicas"
	fooStatusKey     = "sample.warmcache.io/observed-replicas"
)

// newSampleController wires the controller to the factory's informers.
func newSampleController(client kubernetes.Interface, f kubeinformers.SharedInformerFactory) (*sampleController, error) {
	foos := f.Core().V1().ConfigMaps()
	deployments := f.Apps().V1().Deployments()
	c := &sampleController{
		client:            client,
		foosLister:        foos.Lister(),
		foosSynced:        foos.Informer().HasSynced,
		deploymentsLister: deployments.Lister(),
		deploymentsSynced: deployments.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "foos"}),
	}
	if _, err := foos.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueFoo,
		UpdateFunc: func(_, obj any) { c.enqueueFoo(obj) },
	}); err != nil {
		return nil, err
	}
	if _, err := deployments.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleObject,
		UpdateFunc: func(old, new any) {
			if old.(*appsv1.Deployment).ResourceVersion != new.(*appsv1.Deployment).ResourceVersion {
				c.handleObject(new)
			}
		},
		DeleteFunc: c.handleObject,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *sampleController) enqueueFoo(obj any) {
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Data[fooDeploymentKey] != "" {
		c.queue.Add(cache.MetaObjectToName(cm))
	}
}

// handleObject enqueues the foo that owns a deployment.
func (c *sampleController) handleObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	owner := metav1.GetControllerOf(o)
	if owner == nil || owner.Kind != "ConfigMap" {
		return
	}
	foo, err := c.foosLister.ConfigMaps(o.GetNamespace()).Get(owner.Name)
	if err != nil {
		return
	}
	c.enqueueFoo(foo)
}

// Run waits for the caches, then runs workers until ctx is done.
func (c *sampleController) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.foosSynced, c.deploymentsSynced) {
		return fmt.Errorf("caches did not sync: %w", context.Cause(ctx))
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNextWorkItem(ctx) {
				}
			}, 0)
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *sampleController) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.syncHandler(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Error syncing; requeuing", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// syncHandler makes the foo's deployment match it, then records the size
// in the foo's status annotation.
func (c *sampleController) syncHandler(ctx context.Context, key cache.ObjectName) error {
	foo, err := c.foosLister.ConfigMaps(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	name := foo.Data[fooDeploymentKey]
	replicas, err := strconv.Atoi(foo.Data[fooReplicasKey])
	if err != nil {
		return nil // invalid spec: nothing to do until it changes
	}
	deployment, err := c.deploymentsLister.Deployments(foo.Namespace).Get(name)
	if apierrors.IsNotFound(err) {
		deployment, err = c.client.AppsV1().Deployments(foo.Namespace).Create(ctx, newDeployment(foo, name, int32(replicas)), metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(deployment, foo) {
		return fmt.Errorf("deployment %s/%s is not controlled by foo %s", deployment.Namespace, deployment.Name, foo.Name)
	}
	if ptr.Deref(deployment.Spec.Replicas, 1) != int32(replicas) {
		d := deployment.DeepCopy()
		d.Spec.Replicas = ptr.To(int32(replicas))
		if deployment, err = c.client.AppsV1().Deployments(foo.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	observed := strconv.Itoa(int(ptr.Deref(deployment.Spec.Replicas, 1)))
	if foo.Annotations[fooStatusKey] == observed {
		return nil
	}
	fooCopy := foo.DeepCopy()
	if fooCopy.Annotations == nil {
		fooCopy.Annotations = map[string]string{}
	}
	fooCopy.Annotations[fooStatusKey] = observed
	_, err = c.client.CoreV1().ConfigMaps(foo.Namespace).Update(ctx, fooCopy, metav1.UpdateOptions{})
	return err
}

func newDeployment(foo *corev1.ConfigMap, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "nginx", "controller": foo.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       foo.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(foo, corev1.SchemeGroupVersion.WithKind("ConfigMap"))},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
			},
		},
	}
}
