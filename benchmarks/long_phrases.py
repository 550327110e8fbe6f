"""Word lists and sentence templates of the `long` dataset (`benchmarks.long_conversations`).

Templates are first-person lines one speaker says to the other. `{when}` is a time phrase
("yesterday", "last Saturday", "on 7 May 2023"); the other fields are filled from the lists
below. Every line that states a fact contains that fact's answer word as written (a book's
title, a city, a pet's name), so gold evidence can be checked by substring. Small talk names
no fact of any list, and the near misses touch the facts' topics without stating one.
"""

from __future__ import annotations

from typing import NamedTuple

NAMES = (
    "Caroline", "Melanie", "Joanna", "Nate", "Priya", "Marcus", "Elena", "Tomasz", "Aisha",
    "Gareth", "Lucia", "Omar", "Hannah", "Dev", "Sofia", "Rhys", "Maya", "Felix", "Chloe",
    "Idris", "Beatriz", "Callum", "Nadia", "Jonas", "Freya", "Mateo", "Grace", "Kenji",
    "Leah", "Ruben", "Isla", "Samir", "Zoe", "Anton", "Harriet", "Diego", "Niamh", "Victor",
    "Yasmin", "Oscar", "Tessa", "Arjun", "Rosa", "Tom", "Lena", "Ben", "Clara", "Hugo",
    "Ines", "Luke", "Martha", "Ravi", "Sana", "Theo", "Vera", "Will", "Amara", "Erik",
    "Fiona", "Jasper",
)  # fmt: skip
RELATIONS = (
    "cousin", "flatmate", "best friend", "partner", "neighbour", "old school friend", "colleague",
)  # fmt: skip
PETS = (
    ("dog", "beagle"), ("dog", "border collie"), ("dog", "greyhound"), ("dog", "dachshund"),
    ("dog", "labrador"), ("cat", "tabby"), ("cat", "Maine Coon"), ("cat", "ginger kitten"),
    ("rabbit", "lop-eared rabbit"),
)  # fmt: skip
PET_NAMES = (
    "Biscuit", "Pepper", "Miso", "Juniper", "Waffles", "Otis", "Mochi", "Pickles", "Ziggy",
    "Hazel", "Bruno", "Clementine", "Noodle", "Fig",
)  # fmt: skip
ROLES = (
    "UX designer", "physiotherapist", "data analyst", "sous chef", "primary school teacher",
    "project manager", "paramedic", "architect", "lab technician", "copywriter", "pharmacist",
    "sound engineer",
)  # fmt: skip
EMPLOYERS = (
    "Brightwell Logistics", "Northgate Library", "Fernhill Clinic", "Copperleaf Studio",
    "Harbourside Hotel", "Meridian Labs", "Oakridge Academy", "Bluebell Bakery",
    "Tidewater Council", "Kestrel Software", "Ashgrove Hospital", "Saltmarsh Radio",
)  # fmt: skip
CITIES = (
    "Lisbon", "Kyoto", "Edinburgh", "Vienna", "Montreal", "Seville", "Copenhagen", "Reykjavik",
    "Marrakesh", "Budapest", "Porto", "Krakow", "Dubrovnik", "Tallinn", "Naples", "Bruges",
    "Ljubljana", "Valencia", "Istanbul", "Bergen",
)  # fmt: skip
HOLIDAYS = (
    "Crete", "Sardinia", "Bali", "Tenerife", "Madeira", "Corfu", "Cornwall", "Sicily",
    "Mallorca", "the Algarve", "Lake Como", "Santorini", "the Scottish Highlands", "Tasmania",
)  # fmt: skip
BOOKS = (
    ("The Overstory", "Richard Powers"), ("Circe", "Madeline Miller"),
    ("Project Hail Mary", "Andy Weir"), ("Pachinko", "Min Jin Lee"),
    ("The Remains of the Day", "Kazuo Ishiguro"), ("Educated", "Tara Westover"),
    ("Station Eleven", "Emily St. John Mandel"), ("The Night Circus", "Erin Morgenstern"),
    ("A Gentleman in Moscow", "Amor Towles"), ("Lessons in Chemistry", "Bonnie Garmus"),
    ("The Midnight Library", "Matt Haig"), ("Piranesi", "Susanna Clarke"),
    ("The Vanishing Half", "Brit Bennett"), ("Anxious People", "Fredrik Backman"),
    ("Shuggie Bain", "Douglas Stuart"), ("Klara and the Sun", "Kazuo Ishiguro"),
)  # fmt: skip
PURCHASES = (
    ("camera", "Fujifilm X-T30"), ("bike", "Brompton folding bike"),
    ("guitar", "Yamaha acoustic guitar"), ("car", "Toyota Yaris"),
    ("sofa", "mustard velvet sofa"), ("coffee machine", "Gaggia espresso machine"),
    ("kayak", "inflatable Sevylor kayak"), ("telescope", "Celestron telescope"),
    ("sewing machine", "Singer sewing machine"), ("piano", "Roland digital piano"),
)  # fmt: skip
VENUES = (
    "the community centre", "a place near the station", "the old mill", "the arts centre",
    "a tiny studio across town", "the library annexe",
)  # fmt: skip
WORKSHOPS = (
    ("pottery workshop", "made a very wonky bowl"), ("salsa class", "stepped on everyone's toes"),
    ("wine tasting", "pretended to know what tannins are"),
    ("life drawing class", "my hands were a disaster"),
    ("candle-making workshop", "the whole flat smells of fig now"),
    ("sourdough baking course", "came home with a loaf the size of my head"),
    ("first aid course", "practised CPR on a dummy for an hour"),
    ("bouldering taster session", "my forearms are still burning"),
    ("calligraphy workshop", "got ink all over my sleeve"),
    ("improv comedy class", "had to pretend to be a lighthouse"),
)  # fmt: skip
BANDS = (
    "Arctic Monkeys", "Florence and the Machine", "Fleetwood Mac tribute band", "Khruangbin",
    "Wet Leg", "The National", "Little Simz", "Bombay Bicycle Club", "Hozier", "Fontaines D.C.",
)  # fmt: skip


class Plan(NamedTuple):
    line: str
    question: str
    answer: str


PLANS = (
    Plan("I'm going to learn Portuguese before the summer, signed up for evening classes",
         "Which language is {x} planning to learn?", "Portuguese"),
    Plan("I've decided to run the Dublin half marathon in the autumn, training starts Monday",
         "Which race is {x} training for?", "Dublin half marathon"),
    Plan("We're repainting the kitchen sage green once the landlord says yes",
         "What colour is {x} going to paint the kitchen?", "sage green"),
    Plan("I want to get my motorbike licence this year, booked the theory test",
         "What licence does {x} want to get?", "motorbike"),
    Plan("Thinking of volunteering at the animal shelter on Sundays, I filled in the form",
         "Where does {x} plan to volunteer?", "animal shelter"),
    Plan("I'm going to build a vegetable patch on the allotment, leeks first",
         "What does {x} plan to grow first?", "leeks"),
    Plan("I'm saving up to walk the Camino de Santiago next spring",
         "Which long walk is {x} saving up for?", "Camino de Santiago"),
    Plan("Going to try to read one poetry book a month, starting with Mary Oliver",
         "Which poet is {x} starting with?", "Mary Oliver"),
)  # fmt: skip


class Taste(NamedTuple):
    """Something a speaker likes or dislikes: the lines that show it (each contains `key`),
    and the open-domain question it answers ("Yes" for a like, "No" for a dislike)."""

    key: str
    lines: tuple[str, ...]
    question: str


LIKES = (
    Taste("hik", ("Did a long hike up the ridge at the weekend, my legs are done",
                  "Broke in my new hiking boots on the coastal path, twelve miles",
                  "Nothing beats hiking somewhere with a flask of tea and no signal"),
          "Would {x} enjoy a hiking trip in the mountains?"),
    Taste("swim", ("Went wild swimming in the lake before work, freezing but glorious",
                   "I swim at the lido three mornings a week now, it keeps me sane",
                   "Joined the sea swimming club, we go in even in February"),
          "Would {x} enjoy a holiday with lots of open-water swimming?"),
    Taste("cycl", ("Cycled sixty kilometres along the canal on Sunday",
                   "My cycling club does a hill loop every Wednesday, I never miss it",
                   "Been cycling to work every day, way better than the bus"),
          "Would {x} like a cycling tour of the countryside?"),
    Taste("paint", ("Spent all evening painting watercolours of the harbour",
                    "I've been painting again, the little landscapes are getting better",
                    "Bought new brushes, painting is the only thing that switches my brain off"),
          "Would {x} enjoy an art class on landscape painting?"),
    Taste("board game", ("We played board games until 2am, I won Catan twice",
                         "I've got a shelf of forty board games now, it's a problem",
                         "Hosting board game night again, bring snacks"),
          "Would {x} enjoy a board game café evening?"),
    Taste("jazz", ("Found a jazz bar with a live trio on Thursdays, I'm hooked",
                   "I've had jazz records on all week, Coltrane mostly",
                   "Nothing relaxes me like a smoky jazz set"),
          "Would {x} enjoy going to a jazz festival?"),
    Taste("garden", ("Spent the whole day in the garden, the tomatoes are finally red",
                     "My garden is my happy place, I planted forty tulip bulbs",
                     "Gardening before breakfast is the best bit of my day"),
          "Would {x} enjoy a day at a flower and garden show?"),
    Taste("bird", ("Saw a kingfisher on my birdwatching walk, I nearly cried",
                   "I've started keeping a bird list, up to 83 species",
                   "Got up at dawn for the bird count at the marsh, totally worth it"),
          "Would {x} enjoy a guided birdwatching walk?"),
)  # fmt: skip
DISLIKES = (
    Taste("camping", ("Honestly I can't stand camping, I never sleep on those mats",
                      "Camping again? No thanks, once was enough for me"),
          "Would {x} enjoy a weekend camping trip?"),
    Taste("horror", ("I hate horror films, I had nightmares for a week after the last one",
                     "Please don't make me watch another horror film, I really can't"),
          "Would {x} enjoy a horror movie marathon?"),
    Taste("karaoke", ("Karaoke is my personal nightmare, I'd rather do my taxes",
                      "I left the party when the karaoke came out, not for me at all"),
          "Would {x} enjoy a karaoke night?"),
    Taste("cruise", ("A cruise sounds awful to me, stuck on a boat with three thousand people",
                     "My parents love their cruises, I'd go mad, I get seasick on a ferry"),
          "Would {x} enjoy a cruise holiday?"),
    Taste("spicy", ("I can't handle spicy food at all, even mild salsa makes me cry",
                    "Spicy food and me don't get along, my stomach says no"),
          "Would {x} enjoy a chilli-eating challenge?"),
    Taste("theme park", ("Theme parks make me feel sick, I hate the queues and the rides",
                         "I'll hold the bags at the theme park, never going on a coaster again"),
          "Would {x} enjoy a day at a theme park?"),
)  # fmt: skip

# --- fact lines (first person; {when} is the time phrase) ------------------------------------

BOOK_LINES = (
    "I finally finished {title} by {author}, couldn't put it down",
    "Just started reading {title}, {author} writes so well",
    "{title} was my book club pick this month, read it in two evenings",
    "Reading {title} by {author} at the moment, slow burn but worth it",
    "Have you read {title}? I just finished it and the ending got me",
)
RELATIVE_LINES = (
    "My {relation} {name} is staying with us this weekend, bringing terrible jokes as usual",
    "Had dinner with my {relation} {name} last night, we laughed so much",
    "My {relation} {name} called, we talked for two hours about nothing",
    "Helping my {relation} {name} move flat on Saturday, wish me luck",
)
ADOPT_LINES = (
    "My {relation} {name} and I adopted a {breed} {when}! We called the {species} {pet}",
    "{When_cap} my {relation} {name} and I brought home a {breed} from the shelter, a {species} "
    "called {pet}",
    "Big news, {name} (my {relation}) and I adopted a {species} {when}, a {breed} named {pet}",
)
HOLIDAY_LINES = (
    "{name} just got back from a holiday in {place}, so tanned and relaxed",
    "{name} spent a week in {place} on holiday and sent me about a hundred photos",
    "{name} is back from {place}, says the holiday was the best one in years",
)
OLD_JOB_LINES = (
    "Another chaotic shift at {employer}, I'm shattered",
    "Work at {employer} is really grinding me down lately",
    "Stayed late at {employer} again, the rota is a mess",
)
JOB_LINES = (
    "I started my new job as a {role} at {employer} {when}, so nervous",
    "{When_cap} was my first day as a {role} at {employer}, everyone's lovely",
    "New job update: I began at {employer} {when}, working as a {role} now",
)
TRIP_LINES = (
    "I flew to {city} {when} for a long weekend, the food was incredible",
    "{When_cap} I flew to {city} for a few days, walked about thirty thousand steps a day",
    "Had a quick trip to {city}, flew out {when}, still dreaming about it",
)
PURCHASE_LINES = (
    "I bought a {item} {when}, probably shouldn't have but I love it",
    "{When_cap} I finally bought the {item} I'd been eyeing for months",
    "Treated myself and bought a {item} {when}, don't tell my bank",
)
WORKSHOP_LINES = (
    "I went to a {event} at {venue} {when}, {detail}",
    "{When_cap} I tried a {event} at {venue} and {detail}",
    "Did a {event} {when}, {detail}, would go again",
)
CONCERT_LINES = (
    "I saw {band} live {when}, best gig I've been to in ages",
    "{When_cap} I went to see {band} live, I still can't hear properly",
    "Got last-minute tickets and saw {band} live {when}, what a night",
)
OTHER_HOLIDAY_LINES = (
    "{name} is off to {place} next month, lucky thing",
    "{name} keeps talking about going to {place} some day",
)

# --- small talk and near misses -------------------------------------------------------------

OPENERS = (
    "Hey {o}!", "Morning {o}", "Hi! Long time no chat", "Evening!", "Hey, you around?",
    "Hiya {o}, how's things?", "Oh hey, I was just about to message you", "Hello hello",
)  # fmt: skip
CLOSERS = (
    "Anyway, got to run, talk soon!", "Speak later x", "Right, bedtime for me. Night!",
    "Ok the kettle's boiled, chat tomorrow", "Catch you later", "Talk soon, take care",
)  # fmt: skip
REACTIONS = (
    "Oh nice, how was it?", "That sounds amazing!", "No way! Send me photos", "Good for you",
    "Ha, I'm jealous", "Love that", "Tell me everything next time", "Wow, that's big news",
    "Oh that's brilliant", "Aww, that's lovely", "Haha of course you did", "Fair play",
    "I'm so happy for you", "Honestly that sounds like a great time", "Ooh, nice one",
)  # fmt: skip
SMALL_TALK = (
    "It's been raining all day here, I haven't left the flat",
    "Work is busy, three meetings back to back this morning",
    "Had leftover curry for lunch, still good on day three",
    "I need to do a food shop but I keep putting it off",
    "The bus was late again, twenty minutes in the cold",
    "Slept terribly, the neighbours had a party",
    "I've been trying to drink more water, it's going badly",
    "My phone screen cracked, again",
    "Just watched the new episode, no spoilers but wow",
    "It's so windy the bins fell over",
    "I made soup, it's mostly carrots",
    "Feeling a bit run down this week",
    "The heating's broken and the landlord isn't answering",
    "Just back from the dentist, numb face",
    "I've got so much laundry it's becoming a personal crisis",
    "Finally cleaned the fridge, found things I don't want to talk about",
    "Today was one of those days where nothing went right",
    "I've been on hold with the bank for forty minutes",
    "It's actually sunny for once",
    "Trying to cut down on coffee, day two, not great",
    "Had a really nice quiet evening for a change",
    "My back hurts from that office chair",
    "Went for a walk at lunch just to get out of the office",
    "I keep forgetting to reply to emails",
    "The train was packed, standing all the way",
    "I fixed the wobbly shelf, feeling very handy",
    "Ordered pizza, no regrets",
    "Too tired to cook so it's toast for dinner",
    "The new series everyone's talking about is a bit slow for me",
    "Can't believe how fast this month is going",
    "I should really read more, the pile next to my bed keeps growing",
    "Saw a very cute dog at the park, it stole someone's sandwich",
    "I really need a holiday, even just a few days somewhere",
    "There's a concert poster on every lamppost in town",
    "I keep looking at things online I don't need to buy",
    "Work has been a bit dull lately, same old",
    "Someone at work brought in cake, so that's my diet done",
    "The power went out for an hour, read by candlelight like a Victorian",
    "I'm trying a new recipe tonight, wish me luck",
    "Got a parking ticket, five minutes over, unbelievable",
)
LEADS = (
    "Honestly,", "Ugh,", "So,", "Random thought:", "Update:", "Not gonna lie,", "Meanwhile,",
    "In other news,", "Anyway,", "Right,", "Funny thing,", "Also,",
)  # fmt: skip
"""Optional openings of a small-talk line (the line then starts lower-case)."""
QUESTIONS = (
    "How's your week going?", "What are you up to this weekend?", "Did you sleep ok?",
    "Any news?", "How are you doing?", "How was your day?", "What's new with you?",
    "You ok? You went quiet", "Have you eaten yet?", "How's work treating you?",
)  # fmt: skip
RESPONSES = (
    "Oh no!", "Ugh, same here", "Haha classic", "That's rough", "Sounds about right", "Oof",
    "Ha, relatable", "Honestly same", "Oh dear", "Well that's something", "Lol", "Nice",
    "That made me laugh", "Story of my life", "Poor you", "Ah that's annoying",
)  # fmt: skip
ANSWERS = (
    "Not bad, just tired", "Pretty quiet, honestly", "Same as always, busy busy",
    "Can't complain", "Good thanks! Bit hectic", "All fine here", "Honestly a bit meh",
    "Surviving, just about", "Better now it's the evening", "Mostly good, you?",
    "Yeah not much to report", "Ha, where do I start",
)  # fmt: skip
