package main

import "errors"

func runImages([]string) error      { return errors.New("not yet") }
func runOperatorHub([]string) error { return errors.New("not yet") }
