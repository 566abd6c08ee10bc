package textdiff_test

import (
	"fmt"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/textdiff"
)

func ExampleUnified() {
	a := "name: web\nreplicas: 2\nimage: web:1\n"
	b := "name: web\nreplicas: 3\nimage: web:1\n"
	fmt.Print(textdiff.Unified("a/web.yaml", "b/web.yaml", a, b, 1))
	// Output:
	// --- a/web.yaml
	// +++ b/web.yaml
	// @@ -1,3 +1,3 @@
	//  name: web
	// -replicas: 2
	// +replicas: 3
	//  image: web:1
}
