// Command hello is a tiny static binary the image tests put where the operator binary goes.
package main

import "fmt"

func main() { fmt.Println("hello from the test image") }
