"""The benchmark corpora: label names, raw public sources, and the set each one belongs to.

Everything here is plain Python (no ``datasets``): the builder in :mod:`hf_textcluster.data.benchmark` turns
these rows into an Arrow dataset. The provenance of every file is described in ``SOURCES.md`` next to the CSV
files (``../shared/data`` in the development checkout; the confirmation-only corpora's own folder, kept outside the
repository, has its own ``SOURCES.md``).

Rows ``(text, raw_label)`` come from a prepared ``<name>.csv`` (header ``text,label``) or from the raw files of the
public sources, in their own formats; :mod:`hf_textcluster.data.readers` reads both.

Every corpus has a ``role``, fixed before any of the last six was looked at, so that rules are chosen on one set and
checked on others:

* ``"tuning"``: the eight corpora every rule, criterion, threshold and schedule so far was chosen on (agnews,
  searchsnippets, stackoverflow, biomedical, the three GoogleNews, tweet);
* ``"confirmation"``: in-house corpora the default had never run on when the split was made (TREC-6, DBpedia, BBC
  News); their numbers are reported as they fall, never iterated on;
* ``"confirmation_only"``: public corpora of the kinds users bring (support requests and intents, news headlines),
  kept outside the shared data folder, for confirmation only.

:data:`IN_HOUSE` (tuning + confirmation) is what ``all`` means to ``python -m training.bench``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .readers import CSV_COLUMNS, JSON_LINES, JSON_SPLITS, LABEL_TAB_TEXT, LINE_ALIGNED, TEXT_FOLDERS, TREC

_STC2 = "https://raw.githubusercontent.com/jacoxu/STC2/34a28c5a8cf2d6e1db300d32f271f6522db3bde5/dataset/"
_GSDMM = "https://raw.githubusercontent.com/jackyin12/GSDMM/1b344d9de28faee43ec0df0c3cf7ea57737fe14e/data/"
_RAKIB = (
    "https://raw.githubusercontent.com/rashadulrakib/short-text-clustering-enhancement/"
    "f363b66e6fd51f9dd1db679d2a9ce55538ab9868/data/"
)

_TREC = (
    "https://raw.githubusercontent.com/jasminegoel/question-classification/"
    "ac134ca8c4d9cf18b5f2cb50fc4def9270ac2a41/train_5500.label.txt"
)
_DBPEDIA = (
    "https://raw.githubusercontent.com/miraaitsaada/anisotropy_clustering/"
    "b504896e445bdecc8cbfdb2d9b136d8715ae035b/datasets/dbpedia.csv"
)
# The 2,225 BBC articles are one file each: the repository's archive at the pinned commit is one download instead.
_BBC = (
    "https://codeload.github.com/dejanbatanjac/bbc-article-classify-bert/tar.gz/"
    "8265dc84e88b82b87ce7f5b2df5bbbb1159ae922"
)

# Confirmation-only corpora: public corpora of the kinds users bring (their prepared CSVs are kept out of the shared
# data folder and out of this repository).
_BANKING77 = (
    "https://raw.githubusercontent.com/PolyAI-LDN/task-specific-datasets/"
    "57ec275d8078af65b7731c2a98be812d844a6d6b/banking_data/train.csv"
)
_CLINC150 = (
    "https://raw.githubusercontent.com/clinc/oos-eval/828f8093932c8fe6ca7936c3d2e52903b1c523de/data/data_full.json"
)
_AG_NEWS_TEST = (
    "https://raw.githubusercontent.com/mhjabreel/CharCnn_Keras/"
    "555590db4219b1243abb1918effd6a7425a2d75f/data/ag_news_csv/test.csv"
)

# Roles: which set a corpus belongs to (see the module docstring).
TUNING = "tuning"
CONFIRMATION = "confirmation"
CONFIRMATION_ONLY = "confirmation_only"
ROLES = (TUNING, CONFIRMATION, CONFIRMATION_ONLY)


@dataclass(frozen=True)
class CorpusSpec:
    """What the library knows about one benchmark corpus.

    Attributes:
        name: the builder config name and the CSV file stem (``<data_dir>/<name>.csv``).
        label_ids: the raw label ids of the source, as strings, in a fixed order (numeric for numbers).
        label_names: the ``ClassLabel`` names, aligned with ``label_ids`` (the real class names where the
            source documents them, otherwise the raw ids: an empty tuple stands for ``label_ids``).
        num_rows: the number of rows of the prepared file.
        raw_format: one of ``"line_aligned"``, ``"json_lines"``, ``"label_tab_text"``, ``"trec"``,
            ``"csv_columns"``, ``"json_splits"``, ``"text_folders"``.
        urls: the raw files to download (keys ``"texts"``/``"labels"`` for line-aligned sources, ``"data"``
            otherwise), pinned to the commits given in SOURCES.md.
        description: one line for ``DatasetInfo.description``.
        role: the set the corpus belongs to: ``"tuning"``, ``"confirmation"`` or ``"confirmation_only"``.
        raw_options: keyword arguments of the raw format's parser (column names, split, folder root).
    """

    name: str
    label_ids: tuple[str, ...]
    label_names: tuple[str, ...]
    num_rows: int
    raw_format: str
    urls: dict
    description: str
    role: str
    raw_options: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.label_names:
            object.__setattr__(self, "label_names", self.label_ids)
        if self.role not in ROLES:
            raise ValueError(f"Unknown role {self.role!r} for corpus {self.name!r}: expected one of {ROLES}.")

    @property
    def num_labels(self) -> int:
        return len(self.label_ids)

    def label_index(self, raw_label: str) -> int:
        """Index of a raw label id in ``label_ids`` (the integer stored in the ``ClassLabel`` column)."""
        label = raw_label.strip()
        if label not in self.label_ids:
            raise ValueError(
                f"Unknown label {raw_label!r} for corpus {self.name!r}: expected one of the {self.num_labels} raw "
                f"label ids {list(self.label_ids[:10])}{' ...' if self.num_labels > 10 else ''}."
            )
        return self.label_ids.index(label)


def _ids(n: int) -> tuple[str, ...]:
    return tuple(str(i) for i in range(1, n + 1))


# The 89 distinct cluster ids of the Tweet corpus: 1..110 but for these gaps.
_TWEET_GAPS = {2, 3, 4, 5, 6, 7, 8, 9, 31, 33, 34, 35, 39, 43, 47, 48, 50, 53, 69, 76, 105}
_TWEET_IDS = tuple(str(i) for i in range(1, 111) if i not in _TWEET_GAPS)


# The intents of the confirmation-only corpora, sorted (as Python sorts strings).
_BANKING77_INTENTS = (
    "Refund_not_showing_up", "activate_my_card", "age_limit", "apple_pay_or_google_pay", "atm_support",
    "automatic_top_up", "balance_not_updated_after_bank_transfer",
    "balance_not_updated_after_cheque_or_cash_deposit", "beneficiary_not_allowed", "cancel_transfer",
    "card_about_to_expire", "card_acceptance", "card_arrival", "card_delivery_estimate", "card_linking",
    "card_not_working", "card_payment_fee_charged", "card_payment_not_recognised",
    "card_payment_wrong_exchange_rate", "card_swallowed", "cash_withdrawal_charge", "cash_withdrawal_not_recognised",
    "change_pin", "compromised_card", "contactless_not_working", "country_support", "declined_card_payment",
    "declined_cash_withdrawal", "declined_transfer", "direct_debit_payment_not_recognised", "disposable_card_limits",
    "edit_personal_details", "exchange_charge", "exchange_rate", "exchange_via_app", "extra_charge_on_statement",
    "failed_transfer", "fiat_currency_support", "get_disposable_virtual_card", "get_physical_card",
    "getting_spare_card", "getting_virtual_card", "lost_or_stolen_card", "lost_or_stolen_phone",
    "order_physical_card", "passcode_forgotten", "pending_card_payment", "pending_cash_withdrawal", "pending_top_up",
    "pending_transfer", "pin_blocked", "receiving_money", "request_refund", "reverted_card_payment?",
    "supported_cards_and_currencies", "terminate_account", "top_up_by_bank_transfer_charge", "top_up_by_card_charge",
    "top_up_by_cash_or_cheque", "top_up_failed", "top_up_limits", "top_up_reverted", "topping_up_by_card",
    "transaction_charged_twice", "transfer_fee_charged", "transfer_into_account",
    "transfer_not_received_by_recipient", "transfer_timing", "unable_to_verify_identity", "verify_my_identity",
    "verify_source_of_funds", "verify_top_up", "virtual_card_not_working", "visa_or_mastercard",
    "why_verify_identity", "wrong_amount_of_cash_received", "wrong_exchange_rate_for_cash_withdrawal",
)  # fmt: skip
_CLINC150_INTENTS = (
    "accept_reservations", "account_blocked", "alarm", "application_status", "apr", "are_you_a_bot", "balance",
    "bill_balance", "bill_due", "book_flight", "book_hotel", "calculator", "calendar", "calendar_update", "calories",
    "cancel", "cancel_reservation", "car_rental", "card_declined", "carry_on", "change_accent", "change_ai_name",
    "change_language", "change_speed", "change_user_name", "change_volume", "confirm_reservation", "cook_time",
    "credit_limit", "credit_limit_change", "credit_score", "current_location", "damaged_card", "date", "definition",
    "direct_deposit", "directions", "distance", "do_you_have_pets", "exchange_rate", "expiration_date", "find_phone",
    "flight_status", "flip_coin", "food_last", "freeze_account", "fun_fact", "gas", "gas_type", "goodbye",
    "greeting", "how_busy", "how_old_are_you", "improve_credit_score", "income", "ingredient_substitution",
    "ingredients_list", "insurance", "insurance_change", "interest_rate", "international_fees", "international_visa",
    "jump_start", "last_maintenance", "lost_luggage", "make_call", "maybe", "meal_suggestion", "meaning_of_life",
    "measurement_conversion", "meeting_schedule", "min_payment", "mpg", "new_card", "next_holiday", "next_song",
    "no", "nutrition_info", "oil_change_how", "oil_change_when", "order", "order_checks", "order_status", "pay_bill",
    "payday", "pin_change", "play_music", "plug_type", "pto_balance", "pto_request", "pto_request_status",
    "pto_used", "recipe", "redeem_rewards", "reminder", "reminder_update", "repeat", "replacement_card_duration",
    "report_fraud", "report_lost_card", "reset_settings", "restaurant_reservation", "restaurant_reviews",
    "restaurant_suggestion", "rewards_balance", "roll_dice", "rollover_401k", "routing", "schedule_maintenance",
    "schedule_meeting", "share_location", "shopping_list", "shopping_list_update", "smart_home", "spelling",
    "spending_history", "sync_device", "taxes", "tell_joke", "text", "thank_you", "time", "timer", "timezone",
    "tire_change", "tire_pressure", "todo_list", "todo_list_update", "traffic", "transactions", "transfer",
    "translate", "travel_alert", "travel_notification", "travel_suggestion", "uber", "update_playlist", "user_name",
    "vaccines", "w2", "weather", "what_are_your_hobbies", "what_can_i_ask_you", "what_is_your_name", "what_song",
    "where_are_you_from", "whisper_mode", "who_do_you_work_for", "who_made_you", "yes",
)  # fmt: skip
_TREC_COARSE = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
_BBC_CLASSES = ("business", "entertainment", "politics", "sport", "tech")


def _stc2(name: str) -> dict:
    return {"texts": f"{_STC2}{name}.txt", "labels": f"{_STC2}{name}_gnd.txt"}


def _googlenews(suffix: str, num_rows: int, part: str) -> CorpusSpec:
    description = f"GoogleNews ({part}) of Yin & Wang (GSDMM release, JSON lines); 152 clusters, labels are the GSDMM "
    description += "cluster ids."
    urls = {"data": _GSDMM + suffix}
    return CorpusSpec(f"googlenews_{suffix.lower()}", _ids(152), (), num_rows, JSON_LINES, urls, description, TUNING)


_AG_CLASSES = ("World", "Sports", "Business", "Sci/Tech")
_SNIPPET_DOMAINS = (
    "Business", "Computers", "Culture-Arts-Entertainment", "Education-Science", "Engineering", "Health",
    "Politics-Society", "Sports",
)  # fmt: skip
_SO_TAGS = (
    "wordpress", "oracle", "svn", "apache", "excel", "matlab", "visual-studio", "cocoa", "osx", "bash", "spring",
    "hibernate", "scala", "sharepoint", "ajax", "qt", "drupal", "linq", "haskell", "magento",
)  # fmt: skip
_DBPEDIA_CLASSES = (
    "Company", "EducationalInstitution", "Artist", "Athlete", "OfficeHolder", "MeanOfTransportation", "Building",
    "NaturalPlace", "Village", "Animal", "Plant", "Album", "Film", "WrittenWork",
)  # fmt: skip

# One row per corpus: name, label ids, label names (empty: the ids), rows, raw format, urls, description, role and
# the raw format's options.
CORPORA: dict[str, CorpusSpec] = {spec.name: spec for spec in (
    CorpusSpec("agnews", _ids(4), _AG_CLASSES, 8000, LABEL_TAB_TEXT, {"data": _RAKIB + "agnewsdataraw-8000"},
               "AG News subset of Rakib et al. 2020 (lowercased, stop words removed); 4 balanced classes.", TUNING),
    CorpusSpec("searchsnippets", _ids(8), _SNIPPET_DOMAINS, 12340, LINE_ALIGNED, _stc2("SearchSnippets"),
               "SearchSnippets (Phan et al. 2008, STC2 release): web search snippets in 8 domains.", TUNING),
    CorpusSpec("stackoverflow", _ids(20), _SO_TAGS, 20000, LINE_ALIGNED, _stc2("StackOverflow"),
               "StackOverflow question titles (STC2 release, original casing); 20 tags, 1000 each.", TUNING),
    CorpusSpec("biomedical", _ids(20), (), 20000, LINE_ALIGNED, _stc2("Biomedical"),
               "Biomedical paper titles (BioASQ, STC2 release); 20 topic groups, 1000 each.", TUNING),
    _googlenews("TS", 11109, "title + snippet"),
    _googlenews("T", 11108, "titles; the one empty title is dropped"),
    _googlenews("S", 11108, "snippets; the one empty snippet is dropped"),
    CorpusSpec("tweet", _TWEET_IDS, (), 2472, JSON_LINES, {"data": _GSDMM + "Tweet"},
               "Tweet corpus of Yin & Wang (TREC microblog); 89 clusters whose ids range over 1..110.", TUNING),
    CorpusSpec("trec6", _TREC_COARSE, (), 5452, TREC, {"data": _TREC},
               "TREC-6 question classification (Li & Roth, training split train_5500); 6 coarse classes (ABBR, DESC, "
               "ENTY, HUM, LOC, NUM).", CONFIRMATION),
    CorpusSpec("dbpedia", _ids(14), _DBPEDIA_CLASSES, 12000, CSV_COLUMNS, {"data": _DBPEDIA},
               "DBpedia-14 abstracts, the 12,000-text subset of Ait-Saada & Nadif (2023); 14 classes of 823-899 "
               "texts.", CONFIRMATION, {"text_column": "text", "label_column": "label"}),
    CorpusSpec("bbc", _BBC_CLASSES, (), 2225, TEXT_FOLDERS, {"data": _BBC},
               "BBC News (Greene & Cunningham 2006): 2,225 full articles (title, blank line, body) in 5 topical "
               "classes.", CONFIRMATION, {"root": "bbc"}),
    CorpusSpec("banking77", _BANKING77_INTENTS, (), 10003, CSV_COLUMNS, {"data": _BANKING77},
               "BANKING77 (Casanueva et al. 2020), training split: online-banking customer requests in 77 "
               "fine-grained intents (confirmation only).", CONFIRMATION_ONLY,
               {"text_column": "text", "label_column": "category"}),
    CorpusSpec("clinc150", _CLINC150_INTENTS, (), 15000, JSON_SPLITS, {"data": _CLINC150},
               "CLINC150 (Larson et al. 2019), in-scope training queries: requests to a virtual assistant in 150 "
               "intents over 10 domains, 100 each; out-of-scope queries left out (confirmation only).",
               CONFIRMATION_ONLY, {"split": "train"}),
    CorpusSpec("agnews_titles", _ids(4), _AG_CLASSES, 7600, CSV_COLUMNS, {"data": _AG_NEWS_TEST},
               "AG News headlines (Zhang et al. 2015 test split, titles only, as written): 7,600 news headlines in 4 "
               "topics, 1,900 each (confirmation only).", CONFIRMATION_ONLY,
               {"text_column": "title", "label_column": "label", "names": ("label", "title", "description")}),
)}  # fmt: skip

BENCHMARKS: tuple[str, ...] = tuple(CORPORA)


def benchmarks_with_role(*roles: str) -> tuple[str, ...]:
    """The corpora of the given roles (``"tuning"``, ``"confirmation"``, ``"confirmation_only"``), in
    :data:`BENCHMARKS` order."""
    return tuple(name for name, spec in CORPORA.items() if spec.role in roles)


# The in-house corpora (their prepared CSVs are in the shared data folder): what ``all`` means.
IN_HOUSE: tuple[str, ...] = benchmarks_with_role(TUNING, CONFIRMATION)


def resolve_benchmark_name(name: object) -> str:
    """Return the canonical corpus name for ``name`` (case and ``-``/``_``/space insensitive).

    Raises:
        TypeError: ``name`` is not a string.
        ValueError: ``name`` is not one of :data:`BENCHMARKS` (the message lists the valid names).
    """
    if not isinstance(name, str):
        raise TypeError(f"The benchmark name must be a string, one of {list(BENCHMARKS)}; got {type(name).__name__}.")
    if benchmark_key(name) not in CORPORA:
        raise ValueError(f"Unknown benchmark {name!r}. Valid names: {', '.join(BENCHMARKS)}.")
    return benchmark_key(name)


def benchmark_key(name: str) -> str:
    """``name`` as corpus and group names are compared: case, ``-``, ``_`` and spaces alike."""
    return name.strip().lower().replace("-", "_").replace(" ", "_")
