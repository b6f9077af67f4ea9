"""Two landing-page makers of clearly different quality (deterministic, no model): `polished`
builds a styled page with a hero illustration and feature cards; `plain` writes two bare lines."""

import html


def polished(input):
    t = html.escape(input)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{t}</title><style>
body{{margin:0;font-family:sans-serif;background:#fffaf2;color:#1b1b1b}}
header{{background:#ff7a59;color:#fff;padding:28px 40px}} h1{{font-size:40px;margin:0}}
.hero{{display:flex;gap:32px;padding:28px 40px;align-items:center}}
.hero p{{font-size:19px;line-height:1.5;max-width:460px}}
.cta{{display:inline-block;background:#2a9d8f;color:#fff;padding:12px 26px;border-radius:8px;font-size:18px}}
.features{{display:flex;gap:20px;padding:0 40px}} .card{{flex:1;border:2px solid #e9c46a;border-radius:12px;padding:14px}}
.card p{{font-size:16px;line-height:1.4}}
</style></head><body>
<header><h1>{t}</h1></header>
<section class="hero"><div><p>{t} brings you everything you asked for, made with care by people who know their
craft. Come in, look around, and find out why our neighbours keep coming back week after week.</p>
<span class="cta">Sign up</span></div>
<svg width="380" height="230" viewBox="0 0 380 230"><rect width="380" height="230" rx="16" fill="#264653"/>
<circle cx="110" cy="115" r="70" fill="#e9c46a"/><rect x="200" y="50" width="130" height="130" rx="12" fill="#e76f51"/>
<polygon points="60,210 150,120 240,210" fill="#2a9d8f"/></svg></section>
<section class="features">
<div class="card"><h3>Fresh every day</h3><p>Made this morning, never yesterday: what you take home is as good as it gets.</p></div>
<div class="card"><h3>Fair prices</h3><p>One clear price for everything, with no surprises at the till or later.</p></div>
<div class="card"><h3>Close to you</h3><p>Open early and late, a short walk from the station and the park.</p></div>
</section></body></html>"""

def plain(input):
    t = html.escape(input)
    return f"<html><body><p>{t}</p><p>We are open. Sign up</p></body></html>"
