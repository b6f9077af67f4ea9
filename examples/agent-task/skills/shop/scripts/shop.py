"""The shop skill's client: one HTTP call to the shop at $SHOP_URL, its JSON answer on stdout.

    python3 shop.py GET /api/tools
    python3 shop.py POST /api/tools/search_products '{"arguments": {"query": "backpack"}}'
"""

import os
import sys
import urllib.error
import urllib.request

method, path = sys.argv[1].upper(), sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the shop is on loopback
request = urllib.request.Request(os.environ["SHOP_URL"] + path, data=body, method=method,
                                 headers={"Content-Type": "application/json"})
try:
    with opener.open(request, timeout=10) as resp:
        sys.stdout.write(resp.read().decode())
except urllib.error.HTTPError as exc:
    sys.stdout.write(exc.read().decode())
    sys.exit(1)
