"""Code generator: Kafka message-definition JSON in schemas/ → codecs in kraftwire/protocol/messages/."""
