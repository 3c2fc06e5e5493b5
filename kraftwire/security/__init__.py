"""kraftwire.security: TLS contexts, SASL (PLAIN, SCRAM-SHA-256/512), principals and the ACL authorizer.

Everything here except ``tls`` is sans-I/O: the network shells (kraftwire/net) feed bytes and
request bodies in and send what comes back out.
"""
