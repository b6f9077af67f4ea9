"""Pass when the shop's wishlist holds exactly the cheapest in-stock blue backpack under $80
(p2, City Commuter, $64.50): read from the shop itself, not from what the agent said."""

import json
import os
import sys
import urllib.request

url = os.environ["SCOREBOARD_FIXTURE_URL"] + "/wishlist"
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
with opener.open(url, timeout=10) as resp:
    items = json.load(resp)["items"]
if items == ["p2"]:
    print("the wishlist holds exactly p2 (City Commuter, $64.50)")
    sys.exit(0)
print(f"the wishlist holds {items}, expected exactly ['p2']")
sys.exit(1)
