// Command stamp is a main package for TestGoBuildStampsNoRevision to build.
package main

func main() {}
