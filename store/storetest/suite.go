package storetest

// suite is the contract suite Run runs, by area: each area is a subtest
// of Run's t, each case a subtest of its area.
var suite = []struct {
	name  string
	tests []namedTest
}{
	{"Indexer", []namedTest{
		{"AddGetUpdateDelete", testAddGetUpdateDelete},
		{"ListAndListKeys", testListAndListKeys},
		{"ReplaceSwapsContent", testReplaceSwapsContent},
		{"ReplaceKeyErrorChangesNothing", testReplaceKeyError},
		{"KeyErrors", testKeyErrors},
		{"DeleteDeletedFinalStateUnknown", testDeleteDeletedFinalStateUnknown},
		{"TypedLister", testTypedLister},
		{"EmptyKey", testEmptyKey},
	}},
	{"Index", []namedTest{
		{"Queries", testIndexQueries},
		{"UnknownIndex", testUnknownIndex},
		{"MultiValue", testMultiValueIndex},
		{"EmptiedSetsRemoved", testEmptiedSetsRemoved},
		{"GetIndexers", testGetIndexers},
		{"AddIndexersAfterData", testAddIndexersAfterData},
		{"AddIndexersConflict", testAddIndexersConflict},
		{"AddIndexersFunctionError", testAddIndexersFunctionError},
		{"FunctionErrorRejectsWrite", testIndexFunctionErrorRejectsWrite},
	}},
	{"ResourceVersion", []namedTest{
		{"AfterEachOperation", testRVAfterEachOperation},
		{"Bookmark", testBookmark},
	}},
	{"Transaction", []namedTest{
		{"AppliesInOrder", testTransactionInOrder},
		{"PartialKeyErrors", testTransactionPartialKeyErrors},
		{"AllKeyErrors", testTransactionAllKeyErrors},
		{"IndexFunctionError", testTransactionIndexError},
		{"LastIsTombstone", testTransactionLastIsTombstone},
		{"Empty", testTransactionEmpty},
	}},
	{"Apply", []namedTest{
		{"InOrderWithRV", testApplyInOrderWithRV},
		{"EmptyRVTakesLastObject", testApplyEmptyRV},
		{"BookmarkAndNoop", testApplyBookmarkAndNoop},
		{"FailureAppliesNothing", testApplyFailureAppliesNothing},
		{"CancelledContext", testApplyCancelledContext},
		{"AtomicForReaders", testApplyAtomicForReaders},
	}},
	{"State", []namedTest{
		{"Fresh", testStateFresh},
		{"CompleteAfterReplace", testStateCompleteAfterReplace},
	}},
	{"Replace", []namedTest{
		{"PagedCommit", testReplacePagedCommit},
		{"Abort", testReplaceAbort},
		{"InProgress", testReplaceInProgress},
		{"Done", testReplaceDone},
		{"AddKeyError", testReplaceAddKeyError},
		{"LastStagedWins", testReplaceLastStagedWins},
		{"EmptyCommit", testReplaceEmptyCommit},
		{"Large", testReplaceLarge},
	}},
	{"Changes", []namedTest{
		{"AfterCommit", testChangesAfterCommit},
		{"NotCommitted", testChangesNotCommitted},
		{"Released", testChangesReleased},
		{"Chunks", testChangesChunks},
		{"FuncError", testChangesFuncError},
		{"Closed", testChangesClosed},
	}},
	// Fill runs on stores that implement store.Filler; others skip it.
	{"Fill", []namedTest{
		{"VisibleAsAdded", testFillVisibleAsAdded},
		{"Refusals", testFillRefusals},
		{"AbortKeepsContent", testFillAbortKeepsContent},
		{"FailedAddWritesNothing", testFillFailedAddWritesNothing},
	}},
	{"Scan", []namedTest{
		{"KeyOrder", testScanKeyOrder},
		{"StopsAtFirstError", testScanStopsAtFirstError},
		{"CancelledContext", testScanCancelledContext},
		{"Index", testScanIndex},
		{"ResourceVersionOf", testResourceVersionOf},
	}},
	{"Select", []namedTest{
		{"SelectionsMatchAFilteredScan", testSelectMatchesFilter},
		{"SelectWithoutNamespaceIndex", testSelectWithoutNamespaceIndex},
		{"SelectUnknownIndex", testSelectUnknownIndex},
		{"SelectStopsAtCallbackError", testSelectStopsAtCallbackError},
		{"SelectWithoutLabelsAndTheEmptyKey", testSelectWithoutLabels},
		{"SelectFollowsWrites", testSelectFollowsWrites},
	}},
	{"Close", []namedTest{
		{"MethodsReturnErrClosed", testClosedMethods},
		{"OpenReplace", testCloseWithOpenReplace},
	}},
	{"Concurrency", []namedTest{
		{"ReadersAndWriters", testConcurrentReadersAndWriters},
		{"ReplaceWhileReading", testReplaceWhileReading},
	}},
}

// clientGoSuite is the client-go tests RunClientGo runs, grouped as
// client-go's files are.
var clientGoSuite = []struct {
	name  string
	tests []clientGoTest
}{
	{"Store", []clientGoTest{
		{name: "TestCache", perKind: testCGCache},
		{name: "TestIndex", perKind: testCGIndex},
		{name: "TestCacheTransactionShouldIndexErrors", perKind: testCGTransactionIndexErrors},
		{name: "ResyncIsNoop", perKind: testCGResyncIsNoop},
	}},
	{"Index", []clientGoTest{
		{name: "TestGetIndexFuncValues", fn: testCGGetIndexFuncValues},
		{name: "TestMultiIndexKeys", fn: testCGMultiIndexKeys},
		{name: "EmptyIndexValue", fn: testCGEmptyIndexValue},
		{name: "IndexProbeDuplicateValues", fn: testCGIndexProbeDuplicates},
		{name: "IndexNames", fn: testCGIndexNames},
		{name: "LongIndexValue", fn: testCGLongIndexValue},
	}},
	{"ThreadSafeStore", []clientGoTest{
		{name: "TestThreadSafeStoreRV/AddUpdateAndDelete", fn: testCGThreadSafeStoreRV, plainOnly: true},
		{name: "AddedIndexMaintained", perKind: testCGAddedIndexMaintained},
	}},
	{"Listers", []clientGoTest{
		{name: "TestListAll", fn: testCGListAll},
		{name: "ListAllByNamespace", fn: testCGListAllByNamespace},
		{name: "GenericLister", fn: testCGGenericLister},
	}},
}
