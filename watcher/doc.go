package watcher
