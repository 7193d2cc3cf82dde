"""The Scrapy contender: one spider doing the crawler's page work in its callback.

Usage: python bench/contenders/scrapy_spider.py SEED OUT.jsonl [--tuned] [--html-to-markdown]

Same host only, every HTML page converted with html2text (no hard wrap) and written as
one JSON line. ``--tuned`` de-duplicates each page's links before yielding requests
(Scrapy's scheduler de-duplicates them anyway; the tuned spider saves it the work).
``--html-to-markdown`` converts the whole page with the crawler's default converter
instead, with the crawler's options (:func:`crawler.content.convert.convert`).
16 concurrent requests, no robots.txt, no throttling, no cache.
"""

import json
import sys
import urllib.parse

import html2text
import scrapy
from scrapy.crawler import CrawlerProcess

from crawler.content.convert import HTML_TO_MARKDOWN, convert


class DocSpider(scrapy.Spider):
    name = "doc"

    def __init__(self, seed: str, out: str, tuned: bool, same_converter: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.same_converter = same_converter
        self.start_urls = [seed]
        self.allowed_domains = [urllib.parse.urlsplit(seed).hostname]
        self.out = open(out, "w", encoding="utf-8")
        self.tuned = tuned

    def parse(self, response):
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        if self.same_converter:
            markdown = convert(response.text, response.url, HTML_TO_MARKDOWN).markdown
        else:
            converter = html2text.HTML2Text(baseurl=response.url)
            converter.body_width = 0
            markdown = converter.handle(response.text)
        self.out.write(
            json.dumps(
                {
                    "url": response.url,
                    "title": response.css("title::text").get(),
                    "markdown": markdown,
                },
                ensure_ascii=False,
            )
            + "\n"
        )
        urls = [response.urljoin(h) for h in response.css("a::attr(href)").getall()]
        if self.tuned:
            urls = sorted({u.split("#")[0] for u in urls})
        for url in urls:
            if url.startswith(("http://", "https://")):  # not mailto:, javascript:
                yield scrapy.Request(url, callback=self.parse)

    def closed(self, reason):
        self.out.close()


def main() -> int:
    seed, out = sys.argv[1], sys.argv[2]
    process = CrawlerProcess(
        settings={
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
            "ROBOTSTXT_OBEY": False,
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "AUTOTHROTTLE_ENABLED": False,
            "HTTPCACHE_ENABLED": False,
            "COOKIES_ENABLED": False,
            "RETRY_ENABLED": False,
        }
    )
    process.crawl(
        DocSpider, seed=seed, out=out, tuned="--tuned" in sys.argv, same_converter="--html-to-markdown" in sys.argv
    )
    process.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
