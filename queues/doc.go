package queues
