// Package dynamicinformer is client-go's
// dynamicinformer.DynamicSharedInformerFactory on a warmcache file:
// controllers that watch resources as *unstructured.Unstructured (custom
// resources, or any resource named at run time) switch by changing the
// import and passing a factory.Factory, and each informer's cache then
// lives in that file and survives restarts:
//
//	wf, err := factory.New(ctx, factory.Options{Path: "/var/cache/ctl/cache.db", RESTConfig: config})
//	if err != nil {
//		return err
//	}
//	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(wf, dynamicClient, 10*time.Minute, "prod", nil)
//	defer f.Shutdown() // stops the informers, flushes and closes the file
//	widgets := f.ForResource(widgetsGVR)
//	widgets.Informer().AddEventHandler(handler)
//	f.Start(ctx.Done())
//	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) { ... }
//	objs, err := widgets.Lister().ByNamespace("prod").List(selector)
//
// Each informer is factory.Factory.ForDynamic's, listed and watched
// through the dynamic client the Factory was given; its identity in the
// file records the resource, the namespace and the selectors the tweak
// sets, so that factories of different scopes never share stored data.
// The tweak follows package informers' rules (SelectorsOfTweak): one that
// sets list options other than the selectors, Limit and TimeoutSeconds
// gets client-go's in-memory informer, with a log line (Fallbacks), as
// does a resource whose store cannot be opened. For a built-in resource
// (pods through the dynamic client) the informer is apart from package
// informers' typed one, with a store of its own.
//
// What differs from client-go's package: the constructors take the
// factory.Factory first, return *Factory (which implements client-go's
// interface), and the Factory owns the factory.Factory (Shutdown closes the
// file). NewFilteredDynamicInformer, an informer outside any
// factory, has no counterpart: a persistent informer belongs to the
// factory of its file.
package dynamicinformer
