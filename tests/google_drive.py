"""Google Drive's large-file confirmation page, as the IWSLT16 bundle's download meets it: shared
by the download tests and the real-data run."""

DRIVE_ID = "1l5y6Giag9aRPwGtuZHswh3w5v3qEz8D8"
DRIVE_UUID = "0c3e7a5e-9f1b-4d6c-8a2e-5b7d9c1f3e4a"
QUOTA_ID = "1quotaExceededFileIdXXXXXXXXXXXXX"


def drive_confirmation(port: int) -> bytes:
    """Drive's large-file page as served today (one line; its long style sheet trimmed), with the
    form's action pointed at the local server instead of drive.usercontent.google.com."""
    return (
        '<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title><meta http-equiv="content-type" '
        'content="text/html; charset=utf-8"/><style nonce="Xn1rKkq2vV3qWm0YdV0o7g">.goog-inline-block{position:'
        "relative;display:-moz-inline-box;display:inline-block}body{color:#222;font:normal 13px/1.4 arial,sans-serif;"
        'margin:0}.uc-main{padding-top:50px;text-align:center}</style><link rel="icon" href="//ssl.gstatic.com/docs/'
        'doclist/images/drive_2022q3_32dp.png"/></head><body><div class="uc-main"><div id="uc-dl-icon" '
        'class="image-container"><div class="drive-sprite-aux-download-file"></div></div><div id="uc-text"><p '
        'class="uc-warning-caption">Google Drive can\'t scan this file for viruses.</p><p '
        'class="uc-warning-subcaption">'
        f'<span class="uc-name-size"><a href="/open?id={DRIVE_ID}">2016-01.tgz</a> (188M)</span> is too large for '
        'Google to scan for viruses. Would you still like to download this file?</p><form id="download-form" '
        f'action="http://127.0.0.1:{port}/download" method="get"><input type="submit" id="uc-download-link" '
        'class="goog-inline-block jfk-button jfk-button-action" value="Download anyway"/><input type="hidden" '
        f'name="id" value="{DRIVE_ID}"><input type="hidden" name="export" value="download"><input type="hidden" '
        f'name="confirm" value="t"><input type="hidden" name="uuid" value="{DRIVE_UUID}"></form></div></div><div '
        'class="uc-footer"><hr class="uc-footer-divider"></div></body></html>'
    ).encode()
