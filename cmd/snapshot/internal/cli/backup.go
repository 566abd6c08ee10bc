package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/warmcache/warmcache/cmd/snapshot/internal/progress"
)

// backupOptions is `snapshot backup URL --output OUT`.
type backupOptions struct {
	command
	outputFile

	source backupSource
}

func newBackupCommand(c command) *cobra.Command {
	o := &backupOptions{command: c}
	cmd := &cobra.Command{
		Use:   "backup URL --output OUT",
		Short: "Fetch a consistent copy of the cache of a running process",
		Long: `Fetch a consistent hot backup of a cache file from the process that holds it open, over
HTTP: the process serves bolt.DB.BackupHandler at URL (the copy holds every cached object,
Secrets included).

The request carries a bearer token, for the endpoint's authorizer (package backupauth):
--token-file's, else --token's, else the credential of the kubeconfig's user (--kubeconfig,
$KUBECONFIG or ~/.kube/config, --context; a token, a token file or an exec plugin), or the
in-cluster service account's. The token is never printed. It is not sent over plain http://
to a host other than loopback, where anyone on the path could read it: use https://, or
kubectl port-forward and http://127.0.0.1 (--unsafe-token-over-http sends it anyway).

The copy is streamed to a temporary file beside OUT, flushed to disk, checked (complete
length, opens as a warmcache file, passes the bbolt structure check), and only then
moved to OUT. OUT must not exist unless --force is given. A download that receives
nothing for --stall-timeout is abandoned. Inspect the copy with the other commands.`,
		Example: `  kubectl port-forward pod/my-controller-0 8443 &
  snapshot backup https://localhost:8443/debug/warmcache/backup --output cache.db --certificate-authority ca.crt
  snapshot backup http://localhost:8080/debug/warmcache/backup --output cache.db --token-file token
  snapshot info cache.db`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE:              runE(o),
	}
	o.outputFile.addFlags(cmd.Flags())
	o.source.addFlags(cmd.Flags())
	return cmd
}

func (o *backupOptions) Complete(_ *cobra.Command, args []string) error {
	o.source.URL = args[0]
	return nil
}

func (o *backupOptions) Validate() error {
	if err := o.source.validate(); err != nil {
		return err
	}
	return o.outputFile.validate()
}

func (o *backupOptions) Run(ctx context.Context) (err error) {
	if err := checkOutputPath(o.Output, "", o.Force); err != nil {
		return err
	}
	client, err := o.source.connect(o.env)
	if err != nil {
		return err
	}
	defer client.Close()
	tmp, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create a temporary file beside %s: %w", o.Output, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	n, err := client.fetch(ctx, o.common, tmp, "nothing was written to "+o.Output, true)
	if err != nil {
		return err
	}
	if err := installFile(tmp.Name(), o.Output, o.Force); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.env.Stdout, "backed up %s to %s (%s)\n", o.source.URL, o.Output, progress.Size(n))
	return err
}
