"""Verifies notifications with the official Standard Webhooks library.

Reads a JSON list of {"headers": {...}, "body": "..."} on stdin; prints, as JSON, one entry
per notification: "ok", or the library's exception class when it refused the signature.
argv[1] is the secret exactly as the agent was given it (`whsec_<base64>`).
"""

import json
import sys

from standardwebhooks.webhooks import Webhook

secret = sys.argv[1]
hook = Webhook(secret)
results = []
for hit in json.load(sys.stdin):
    try:
        hook.verify(hit["body"], hit["headers"])
        results.append("ok")
    except Exception as error:  # the library's WebhookVerificationError and friends
        results.append(type(error).__name__)
print(json.dumps(results))
