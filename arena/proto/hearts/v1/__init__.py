"""hearts.v1: messages and gRPC stubs generated from proto/hearts/v1/*.proto."""
