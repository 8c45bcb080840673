"""Generate catalog-outdoor.json: an invented outdoor-goods shop (camping, hiking,
cycling, fishing, swimming, skiing, climbing, drinkware, lights) used as a second,
larger evaluation catalog for product search.

Deterministic (fixed seed), standard library only:
    python retrieval/evalsets/make_outdoor_catalog.py
writes retrieval/evalsets/catalog-outdoor.json next to this file.

build() also returns each record's hidden attributes (type key, brand, attribute
labels) under "_attrs"; they are stripped from the written file and only used to
label queries.
"""
import itertools
import json
import os
import random

SEED = 20261130
LINES = 2  # product lines (series) per brand and type

CAMP = ["山野客", "北境", "拓野", "营地家", "Campova", "云岭"]
APPAREL = ["北境", "极行", "拓野", "峰客", "Alpinor", "云岭"]
SHOES = ["极行", "峰客", "Trekwise", "山途", "Alpinor"]
BAGS = ["山野客", "极行", "Trekwise", "峰客", "拓野"]
CYCLE = ["风驰", "骑迹", "Veloxa", "轮界", "速骑"]
FISH = ["渔乐", "钓圣", "海钓王", "江湖客", "Lurex"]
SWIM = ["蓝鲸", "浪速", "Aquafin", "鱼跃"]
SKI = ["雪狐", "白峰", "Nivalis", "冰川"]
CLIMB = ["岩羚", "攀峰", "Cragon"]
DRINK = ["暖途", "山泉", "Thermova", "极行"]
LIGHT = ["光野", "夜行者", "Lumora", "拓野"]

SERIES = ["远峰", "星野", "冷山", "风语", "探索者", "云迹", "极光", "游隼", "松风", "赤岩",
          "雪线", "流浪者", "青川", "朝露", "疾风", "苍穹", "岚", "旷野", "晨星", "山脊",
          "逐日", "长风", "白桦", "蓝湖", "穿越", "猎户", "银河", "野径", "峡谷", "飞鸟",
          "领航", "轻羽", "磐石", "天际", "追光", "碧波", "海燕", "惊蛰", "秋实", "岩鹰"]

GENDER = ("gender", [("男款", "男款版型", 1.0, ""), ("女款", "女款版型", 1.0, "")])


def d(key, values):
    return (key, values)


# Each type: key, category, noun (ends every product name), brands, per-brand count,
# dims [(attr, [(label in name, spec text, price factor, extra usage)])],
# base price, base specs, description, usage.
TYPES = [
    dict(key="tent", cat="露营帐篷", noun="帐篷", brands=CAMP, n=7, price=399,
         dims=[d("persons", [("1人", "适合1人，内帐210×90厘米", 0.8, "单人徒步过夜"),
                              ("2人", "适合2人，内帐210×140厘米", 1.0, "情侣或两人露营"),
                              ("3人", "适合3人，内帐210×180厘米", 1.25, "小家庭露营"),
                              ("4人", "适合4人，内帐240×210厘米", 1.5, "家庭露营"),
                              ("6人", "适合5-6人，带前厅", 2.1, "多人团建露营")]),
               d("season", [("三季", "三季款，春夏秋使用，网纱内帐通风", 1.0, "春夏秋季露营"),
                            ("四季", "四季款，防风裙设计，可抗小雪", 1.6, "冬季和高海拔露营")]),
               d("build", [("双层", "双层结构，20D硅涂外帐，防水指数PU3000", 1.0, ""),
                           ("自动速开", "液压自动速开，30秒搭好，210D牛津布", 0.8, "新手免搭建")])],
         desc="{b}{s}系列帐篷，防雨防风，铝合金帐杆，带收纳袋。",
         usage="户外露营、徒步过夜和野外休息"),
    dict(key="tarp", cat="露营帐篷", noun="天幕", brands=CAMP[:5], n=5, price=259,
         dims=[d("shape", [("方形", "方形天幕", 1.0, ""), ("蝶形", "蝶形天幕，造型好看", 1.1, ""),
                           ("六角", "六角天幕", 1.05, "")]),
               d("size", [("3×3米", "展开3×3米，适合2-4人", 0.8, ""), ("4×4米", "展开4×4米，适合4-6人", 1.0, ""),
                          ("5×6米", "展开5×6米，适合8人以上", 1.4, "")]),
               d("coat", [("黑胶", "黑胶涂层，遮光率99%，UPF50+", 1.2, "夏季防晒"),
                          ("银胶", "银胶涂层，防晒隔热", 1.0, "")])],
         desc="{b}{s}天幕，遮阳挡雨，配两根天幕杆和地钉风绳。",
         usage="露营遮阳挡雨、野餐和户外聚会"),
    dict(key="sleepbag", cat="睡袋", noun="睡袋", brands=CAMP, n=8, price=199,
         dims=[d("shape", [("信封式", "信封式，可两只拼接成双人", 1.0, ""),
                           ("木乃伊式", "木乃伊式，带头部抽绳帽兜", 1.15, "")]),
               d("fill", [("棉", "中空棉填充", 0.7, ""), ("白鸭绒", "90%白鸭绒填充", 1.8, ""),
                          ("白鹅绒", "95%白鹅绒填充，蓬松度800", 2.8, "")]),
               d("temp", [("夏季", "舒适温度15℃，极限温度8℃", 0.6, "夏季和室内午休"),
                          ("三季", "舒适温度5℃，极限温度-2℃", 1.0, "春秋季露营"),
                          ("冬季", "舒适温度-10℃，极限温度-18℃", 1.6, "冬季露营"),
                          ("极寒", "舒适温度-20℃，极限温度-30℃", 2.4, "雪山和高海拔极寒环境")])],
         desc="{b}{s}睡袋，保暖舒适，附压缩袋。",
         usage="露营、徒步过夜和自驾住宿时睡觉保暖"),
    dict(key="pad", cat="睡垫", noun="防潮垫", brands=CAMP, n=4, price=69,
         dims=[d("kind", [("铝膜", "铝膜防潮垫，厚5毫米", 0.6, ""), ("蛋巢", "XPE蛋巢折叠垫，厚2厘米", 1.2, ""),
                          ("自动充气", "自动充气垫，厚5厘米，R值3.5", 2.5, "冬季隔寒")]),
               d("width", [("单人", "单人款，190×60厘米", 1.0, ""), ("双人", "双人款，190×130厘米", 1.7, "")])],
         desc="{b}{s}防潮垫，隔绝地面潮气和凉气。",
         usage="铺在帐篷里或地上隔潮隔凉，露营野餐睡觉"),
    dict(key="airbed", cat="睡垫", noun="充气床垫", brands=CAMP[:4], n=3, price=229,
         dims=[d("width", [("单人", "单人，195×70厘米", 1.0, ""), ("双人", "双人，195×140厘米", 1.6, "")]),
               d("pump", [("脚踩充气", "内置脚踩气泵", 1.0, ""), ("内置电泵", "内置电动气泵，一键充放气", 1.5, "")])],
         desc="{b}{s}充气床垫，植绒表面，收纳小巧。",
         usage="车载露营、帐篷内睡觉和家里临时加床"),
    dict(key="stove", cat="露营炊具", noun="炉具", brands=CAMP, n=4, price=129,
         dims=[d("kind", [("分体式炉头", "分体式气炉头，带防风罩", 1.0, ""),
                          ("一体式炉头", "一体式迷你炉头，重量仅90克", 0.8, "轻量徒步"),
                          ("卡式炉", "便携卡式炉，使用长气罐", 1.2, "露营涮火锅"),
                          ("酒精炉", "酒精炉，无需气罐", 0.4, "")]),
               d("power", [("2000W", "火力2000W", 1.0, ""), ("3500W", "火力3500W，猛火", 1.3, "")])],
         desc="{b}{s}野营炉，便携折叠，点火稳定。",
         usage="户外露营做饭、烧水和野炊"),
    dict(key="gas", cat="露营炊具", noun="气罐", brands=CAMP[:3], n=2, price=25,
         dims=[d("kind", [("高山扁气罐", "丁烷丙烷混合高山扁气罐，低温可用", 1.0, "高海拔低温"),
                          ("卡式长气罐", "卡式炉专用长气罐", 0.6, "")]),
               d("weight", [("230克", "净含量230克", 1.0, ""), ("450克", "净含量450克", 1.6, "")])],
         desc="{b}{s}户外燃气罐，配合炉具使用。",
         usage="给露营炉具、卡式炉供气"),
    dict(key="cookset", cat="露营炊具", noun="锅具套装", brands=CAMP, n=3, price=159,
         dims=[d("people", [("1-2人", "1-2人份，含锅、碗", 0.8, ""), ("3-4人", "3-4人份，含锅、煎盘、碗", 1.2, ""),
                            ("5-6人", "5-6人份，含大锅、煎盘、水壶", 1.6, "")]),
               d("mat", [("铝合金", "硬质氧化铝合金", 1.0, ""), ("钛", "纯钛材质，超轻", 2.5, "轻量徒步"),
                         ("不锈钢", "304不锈钢", 1.2, "")])],
         desc="{b}{s}户外套锅，可叠放收纳。",
         usage="露营野炊煮饭、煮面和烧水"),
    dict(key="lantern", cat="露营灯具", noun="露营灯", brands=LIGHT + ["营地家"], n=4, price=99,
         dims=[d("power", [("充电式", "Type-C充电，内置10000毫安电池，可给手机充电", 1.2, ""),
                           ("电池式", "使用3节AA电池", 0.7, ""), ("燃气", "燃气汽灯，使用高山气罐", 1.5, "")]),
               d("style", [("复古", "复古马灯造型，暖光", 1.1, "营造氛围"), ("挂式", "带挂钩，可挂帐篷顶", 1.0, "")])],
         desc="{b}{s}营地灯，多档调光，防泼水。",
         usage="夜间营地照明、帐篷内照明"),
    dict(key="chair", cat="露营家具", noun="折叠椅", brands=CAMP, n=4, price=119,
         dims=[d("style", [("月亮椅", "月亮椅，包裹感强", 1.0, ""), ("克米特椅", "克米特椅，实木扶手", 1.8, ""),
                           ("高背椅", "高背可躺款", 1.3, "午休"), ("折叠凳", "小马扎折叠凳", 0.4, "钓鱼排队")]),
               d("mat", [("铝合金", "7075铝合金支架，承重150公斤", 1.2, ""), ("钢管", "碳钢支架，承重120公斤", 0.9, "")])],
         desc="{b}{s}户外折叠椅，收纳方便。",
         usage="露营、野餐、钓鱼和看球赛时坐着休息"),
    dict(key="table", cat="露营家具", noun="折叠桌", brands=CAMP, n=3, price=169,
         dims=[d("style", [("蛋卷桌", "铝合金蛋卷桌面，可卷起收纳", 1.0, ""), ("IGT桌", "IGT模块化桌，可嵌入炉具", 1.6, ""),
                           ("实木桌", "实木桌面，折叠腿", 1.4, "")]),
               d("size", [("60厘米", "桌面60×40厘米", 0.7, ""), ("90厘米", "桌面90×60厘米", 1.0, ""),
                          ("120厘米", "桌面120×60厘米", 1.3, "")])],
         desc="{b}{s}户外折叠桌，稳固耐用。",
         usage="露营、野餐吃饭摆放物品"),
    dict(key="cart", cat="露营家具", noun="营地推车", brands=CAMP[:3], n=2, price=299,
         dims=[d("cap", [("100升", "容量100升，承重80公斤", 1.0, ""), ("150升", "容量150升，承重120公斤，带刹车", 1.3, "")])],
         desc="{b}{s}四轮折叠营地车，大轮适应草地沙地。",
         usage="露营搬运装备、海边和公园拉东西"),
    dict(key="poles", cat="徒步登山", noun="登山杖", brands=APPAREL[:5], n=4, price=129,
         dims=[d("mat", [("碳纤维", "碳纤维杖身，单支约200克", 1.8, ""), ("铝合金", "7075铝合金杖身，单支约260克", 1.0, "")]),
               d("lock", [("外锁", "外锁快速调节，三节伸缩", 1.0, ""), ("折叠", "四节Z型折叠，收纳长度38厘米", 1.3, "越野跑")]),
               d("grip", [("直柄", "直柄EVA握把", 1.0, ""), ("T柄", "T型手柄", 0.9, "老人散步")])],
         desc="{b}{s}登山杖，钨钢杖尖，附泥托和雪托。",
         usage="徒步、登山上下坡时支撑，减轻膝盖压力"),
    dict(key="hardshell", cat="徒步服装", noun="冲锋衣", brands=APPAREL, n=6, price=499,
         dims=[GENDER,
               d("kind", [("单层", "单层硬壳，防水透湿面料，防水指数10000毫米", 1.0, "春秋徒步挡风挡雨"),
                          ("三合一", "三合一，外层硬壳加可拆抓绒内胆", 1.4, "冬季出行"),
                          ("羽绒内胆三合一", "三合一，可拆羽绒内胆", 2.0, "寒冷地区和滑雪")]),
               d("color", [("黑色", "黑色", 1.0, ""), ("蓝色", "蓝色", 1.0, ""), ("红色", "红色", 1.0, ""),
                           ("卡其", "卡其色", 1.0, "")])],
         desc="{b}{s}冲锋衣，防风防水，压胶工艺，可收纳帽子。",
         usage="徒步登山、旅行和雨雪天气出行防风防水"),
    dict(key="softshell", cat="徒步服装", noun="软壳衣", brands=APPAREL[:5], n=4, price=359,
         dims=[GENDER, d("warm", [("薄款", "薄款，弹力防泼水", 1.0, "春秋"), ("加绒", "内里摇粒绒加厚", 1.3, "秋冬")])],
         desc="{b}{s}软壳外套，弹力舒适，防风防泼水。",
         usage="徒步、登山和日常通勤挡风保暖"),
    dict(key="fleece", cat="徒步服装", noun="抓绒衣", brands=APPAREL, n=3, price=159,
         dims=[GENDER, d("gram", [("100g", "100克薄抓绒", 0.8, ""), ("200g", "200克中厚抓绒", 1.0, ""),
                                   ("300g", "300克厚抓绒", 1.3, "")]),
               d("zip", [("立领开衫", "全拉链立领", 1.0, ""), ("半拉链", "半拉链套头", 0.9, "")])],
         desc="{b}{s}抓绒衣，轻暖透气，可做冲锋衣内胆。",
         usage="户外保暖中间层、秋冬日常穿着"),
    dict(key="down", cat="徒步服装", noun="羽绒服", brands=APPAREL, n=4, price=699,
         dims=[GENDER, d("fill", [("600蓬", "90%白鸭绒，600蓬", 1.0, ""), ("800蓬", "95%白鹅绒，800蓬", 1.6, "")]),
               d("len", [("短款", "短款轻薄，可收纳", 1.0, ""), ("中长款", "中长款加厚连帽", 1.4, "东北和高寒地区")])],
         desc="{b}{s}户外羽绒服，保暖轻盈，防泼水面料。",
         usage="冬季户外保暖、雪山徒步和日常御寒"),
    dict(key="pants", cat="徒步服装", noun="速干裤", brands=APPAREL, n=4, price=199,
         dims=[GENDER, d("kind", [("长裤", "速干长裤，四面弹", 1.0, ""), ("两截可拆", "两截可拆，长裤变短裤", 1.1, "夏季徒步"),
                                   ("加绒冲锋裤", "加绒冲锋裤，防水防风", 1.5, "冬季")])],
         desc="{b}{s}户外裤，速干耐磨，多口袋。",
         usage="徒步、登山、露营时穿着"),
    dict(key="boots", cat="徒步鞋", noun="登山鞋", brands=SHOES, n=8, price=499,
         dims=[GENDER, d("height", [("高帮", "高帮护踝", 1.2, "重装徒步"), ("中帮", "中帮", 1.0, ""),
                                     ("低帮", "低帮轻便", 0.85, "轻徒步和城市")]),
               d("wp", [("防水", "防水透湿膜，涉浅水不湿脚", 1.2, "雨天和湿地"), ("透气", "网面透气款", 0.9, "夏季")])],
         desc="{b}{s}登山鞋，橡胶防滑大底，抓地力强，尺码男39-46/女35-40。",
         usage="徒步、登山、爬山和户外旅行"),
    dict(key="watershoe", cat="徒步鞋", noun="溯溪鞋", brands=SHOES[:3], n=2, price=199,
         dims=[GENDER],
         desc="{b}{s}溯溪鞋，鞋底排水孔，快干防滑。",
         usage="溯溪、涉水、海边和漂流"),
    dict(key="gaiter", cat="徒步鞋", noun="雪套", brands=APPAREL[:3], n=2, price=69,
         dims=[d("len", [("高筒", "高筒护至小腿", 1.0, ""), ("低筒", "低筒轻便", 0.8, "越野跑")])],
         desc="{b}{s}防水雪套，防止雪、沙石、泥水进鞋。",
         usage="雪地徒步、沙漠徒步防沙防雪"),
    dict(key="pack", cat="背包", noun="登山包", brands=BAGS, n=7, price=299,
         dims=[d("cap", [("20升", "容量20升", 0.7, "一日短途"), ("30升", "容量30升", 0.9, "一日徒步"),
                         ("40升", "容量40升", 1.1, "两日徒步"), ("50升", "容量50升，背负系统可调", 1.4, "多日重装"),
                         ("65升", "容量65升，铝支撑背负", 1.8, "多日重装穿越")]),
               d("gender", [("男款", "男款背长", 1.0, ""), ("女款", "女款背长，肩带加窄", 1.0, "")]),
               d("feat", [("带防雨罩", "附防雨罩，可放水袋", 1.0, ""), ("轻量", "轻量版，仅重900克", 1.1, "")])],
         desc="{b}{s}户外双肩背包，透气背板，胸扣腰带分担重量。",
         usage="徒步、登山和旅行背装备"),
    dict(key="daypack", cat="背包", noun="腰包", brands=BAGS[:3], n=2, price=79,
         dims=[d("cap", [("3升", "容量3升", 1.0, ""), ("6升", "容量6升，可放水壶", 1.3, "")])],
         desc="{b}{s}户外腰包，防泼水，斜挎腰挎两用。",
         usage="徒步、城市出行放手机钥匙"),
    dict(key="headlamp", cat="灯具", noun="头灯", brands=LIGHT, n=6, price=89,
         dims=[d("lumen", [("200流明", "最大200流明，射程60米", 0.7, ""), ("500流明", "最大500流明，射程120米", 1.0, ""),
                           ("1000流明", "最大1000流明，射程200米", 1.6, "夜爬和搜救")]),
               d("power", [("充电", "Type-C充电，内置锂电池", 1.1, ""), ("电池", "3节AAA电池", 0.8, "")]),
               d("sensor", [("感应", "挥手感应开关", 1.1, ""), ("红光", "带红光模式，不刺眼", 1.0, "")])],
         desc="{b}{s}头戴式头灯，防水IPX6，可调角度。",
         usage="夜跑、夜爬、露营、钓鱼和检修照明"),
    dict(key="flashlight", cat="灯具", noun="强光手电筒", brands=LIGHT[:3], n=2, price=129,
         dims=[d("lumen", [("1500流明", "1500流明", 1.0, ""), ("3000流明", "3000流明，可变焦", 1.4, "")])],
         desc="{b}{s}强光手电，铝合金机身，防水。",
         usage="户外夜行、应急照明和巡逻"),
    dict(key="multitool", cat="户外工具", noun="多功能工具钳", brands=["拓野", "Campova"], n=2, price=149,
         dims=[d("fn", [("12合1", "12种功能：钳子、刀、螺丝刀、开瓶器等", 1.0, ""),
                        ("18合1", "18种功能，带锯条和锉刀", 1.4, "")])],
         desc="{b}{s}多功能工具钳，不锈钢，带尼龙套。",
         usage="露营、自驾和日常维修应急"),
    dict(key="bikehelmet", cat="骑行装备", noun="骑行头盔", brands=CYCLE, n=5, price=199,
         dims=[d("kind", [("公路", "公路车气动款", 1.2, "公路车"), ("山地", "山地车款，带帽檐", 1.0, "山地越野"),
                          ("城市通勤", "城市通勤款，带尾灯", 0.8, "电动车和共享单车通勤")]),
               d("size", [("M码", "M码，头围54-58厘米", 1.0, ""), ("L码", "L码，头围58-62厘米", 1.0, "")]),
               d("shell", [("一体成型", "一体成型EPS内衬", 1.0, ""), ("MIPS", "MIPS防旋转冲击系统", 1.6, "")])],
         desc="{b}{s}自行车头盔，通风孔设计，可调节后箍。",
         usage="骑自行车、公路车、山地车时保护头部"),
    dict(key="jersey", cat="骑行装备", noun="骑行服", brands=CYCLE, n=5, price=159,
         dims=[GENDER, d("sleeve", [("短袖", "短袖上衣", 1.0, "夏季"), ("长袖", "长袖上衣", 1.2, "春秋"),
                                     ("秋冬加绒长袖", "加绒长袖，防风", 1.6, "秋冬")]),
               d("color", [("黑色", "黑色", 1.0, ""), ("荧光黄", "荧光黄，高可见", 1.0, "")])],
         desc="{b}{s}骑行上衣，速干排汗，后背三口袋，反光条。",
         usage="公路车、山地车骑行时穿着"),
    dict(key="bibs", cat="骑行装备", noun="骑行裤", brands=CYCLE, n=3, price=189,
         dims=[GENDER, d("kind", [("背带短裤", "背带短裤，3D硅胶坐垫", 1.0, "长途骑行"),
                                   ("长裤", "长裤，海绵坐垫", 1.1, "秋冬")])],
         desc="{b}{s}骑行裤，减震坐垫，防磨。",
         usage="长距离骑行减少屁股疼"),
    dict(key="computer", cat="骑行装备", noun="码表", brands=CYCLE[:4], n=3, price=299,
         dims=[d("kind", [("GPS", "GPS定位，记录轨迹，支持心率踏频", 1.6, ""), ("无线", "无线传感器，测速测里程", 0.4, "")]),
               d("screen", [("彩屏", "2.4寸彩屏，带导航", 1.5, "导航"), ("黑白屏", "黑白屏，续航长", 1.0, "")])],
         desc="{b}{s}自行车码表，防水，附把立支架。",
         usage="骑行时显示速度、里程、时间等数据"),
    dict(key="frontlight", cat="骑行装备", noun="自行车前灯", brands=CYCLE[:3] + LIGHT[:2], n=3, price=89,
         dims=[d("lumen", [("400流明", "400流明", 0.7, ""), ("800流明", "800流明", 1.0, ""), ("1200流明", "1200流明，远近光", 1.5, "夜骑山路")]),
               d("feat", [("USB充电", "USB充电，续航4小时", 1.0, ""), ("带喇叭", "带电子喇叭，USB充电", 1.1, "")])],
         desc="{b}{s}自行车车灯，防水，快拆安装在车把上。",
         usage="夜骑照明，看清路面"),
    dict(key="taillight", cat="骑行装备", noun="自行车尾灯", brands=CYCLE, n=2, price=49,
         dims=[d("kind", [("刹车感应", "智能刹车感应，减速自动变亮", 1.5, ""), ("普通", "爆闪模式，USB充电", 1.0, "")])],
         desc="{b}{s}自行车尾灯，夜间警示后车。",
         usage="夜骑时提醒后方车辆"),
    dict(key="lock", cat="骑行装备", noun="自行车锁", brands=CYCLE[:4], n=2, price=69,
         dims=[d("kind", [("U型锁", "U型锁，C级锁芯", 1.2, ""), ("链条锁", "链条锁，长1米", 1.0, ""),
                          ("密码锁", "4位密码钢缆锁", 0.5, ""), ("指纹锁", "指纹解锁，USB充电", 2.0, "")])],
         desc="{b}{s}自行车防盗锁，防剪防撬。",
         usage="停车防盗，锁自行车和电动车"),
    dict(key="bikegloves", cat="骑行装备", noun="骑行手套", brands=CYCLE, n=2, price=59,
         dims=[d("kind", [("半指", "半指，掌心硅胶减震", 1.0, "夏季"), ("全指", "全指，可触屏，防风", 1.3, "冬季")])],
         desc="{b}{s}骑行手套，防滑减震。",
         usage="骑自行车时保护手掌"),
    dict(key="pump", cat="骑行装备", noun="打气筒", brands=CYCLE[:4], n=2, price=79,
         dims=[d("kind", [("落地式", "落地式，带气压表，最大160PSI", 1.0, ""), ("迷你便携", "迷你便携，可挂车架", 0.6, ""),
                          ("电动", "电动充气泵，数显", 2.0, "汽车电动车也能用")])],
         desc="{b}{s}自行车打气筒，美嘴法嘴通用。",
         usage="给自行车轮胎充气"),
    dict(key="taizhu", cat="钓鱼", noun="台钓竿", brands=FISH, n=6, price=199,
         dims=[d("len", [("3.6米", "长3.6米", 0.8, ""), ("4.5米", "长4.5米", 0.9, ""), ("5.4米", "长5.4米", 1.0, ""),
                         ("6.3米", "长6.3米", 1.15, ""), ("7.2米", "长7.2米", 1.3, "")]),
               d("tune", [("19调", "19调，硬调", 1.0, "钓大鱼"), ("28调", "28调，软调", 1.0, "钓鲫鱼小鱼")]),
               d("mat", [("碳素", "高碳素材质", 1.0, ""), ("超轻超硬", "46T高碳，超轻超硬", 1.6, "")])],
         desc="{b}{s}台钓竿，手竿，竿身轻盈，附竿包。",
         usage="水库、河流、黑坑台钓鲫鱼鲤鱼草鱼"),
    dict(key="lure", cat="钓鱼", noun="路亚竿", brands=FISH, n=4, price=229,
         dims=[d("handle", [("直柄", "直柄，配纺车轮", 1.0, ""), ("枪柄", "枪柄，配水滴轮", 1.1, "")]),
               d("power", [("ML调", "ML调，软", 1.0, "翘嘴马口"), ("M调", "M调，中", 1.0, ""), ("MH调", "MH调，偏硬", 1.1, "鳜鱼黑鱼")]),
               d("len", [("1.8米", "长1.8米，两节", 0.9, ""), ("2.1米", "长2.1米，两节", 1.0, "")])],
         desc="{b}{s}路亚竿，碳素竿身，富士导环。",
         usage="路亚钓鲈鱼、翘嘴、鳜鱼"),
    dict(key="searod", cat="钓鱼", noun="海竿", brands=FISH, n=3, price=159,
         dims=[d("len", [("2.1米", "长2.1米", 0.8, ""), ("2.7米", "长2.7米", 1.0, ""), ("3.6米", "长3.6米", 1.2, "")]),
               d("kind", [("抛竿", "远投抛竿", 1.0, ""), ("船钓竿", "船钓竿，腰力强", 1.2, "出海船钓")])],
         desc="{b}{s}海竿，耐海水腐蚀，硬度高。",
         usage="海边、水库远投和船钓大鱼"),
    dict(key="isorod", cat="钓鱼", noun="矶钓竿", brands=FISH[:2], n=1, price=399,
         dims=[d("len", [("5.3米", "长5.3米，1.5号", 1.0, "")])],
         desc="{b}{s}矶钓竿，细腻竿梢。",
         usage="海边礁石矶钓"),
    dict(key="line", cat="钓鱼", noun="鱼线", brands=FISH, n=5, price=29,
         dims=[d("mat", [("尼龙", "尼龙线，柔软", 0.6, ""), ("碳素", "碳素氟碳线，耐磨下沉快", 1.3, ""),
                         ("PE编织", "8编PE线，拉力大", 1.8, "路亚海钓")]),
               d("num", [("0.8号", "0.8号", 1.0, "钓小鱼"), ("1.5号", "1.5号", 1.0, ""), ("3号", "3号", 1.1, "钓大鱼")]),
               d("len", [("50米", "长50米", 1.0, ""), ("100米", "长100米", 1.6, "")])],
         desc="{b}{s}鱼线，拉力强，低记忆。",
         usage="钓鱼做主线、子线"),
    dict(key="spinning", cat="钓鱼", noun="纺车轮", brands=FISH, n=4, price=189,
         dims=[d("size", [("1000型", "1000型，轻巧", 0.9, "溪流"), ("2000型", "2000型", 1.0, ""), ("3000型", "3000型", 1.1, ""),
                          ("5000型", "5000型，大线杯", 1.3, "海钓")]),
               d("cup", [("金属线杯", "金属线杯，卸力5公斤", 1.2, ""), ("塑料线杯", "塑料线杯", 0.8, "")])],
         desc="{b}{s}纺车式渔轮，轴承顺滑，防倒转。",
         usage="路亚、海竿和抛竿收放鱼线"),
    dict(key="baitcaster", cat="钓鱼", noun="水滴轮", brands=FISH[:4], n=2, price=329,
         dims=[d("hand", [("左手", "左手摇柄", 1.0, ""), ("右手", "右手摇柄", 1.0, "")]),
               d("ratio", [("7.2速比", "速比7.2:1，磁力刹车", 1.0, "")])],
         desc="{b}{s}水滴轮，防炸线磁力刹车。",
         usage="枪柄路亚竿抛投"),
    dict(key="hook", cat="钓鱼", noun="鱼钩", brands=FISH[:4], n=2, price=12,
         dims=[d("kind", [("伊势尼", "伊势尼钩，有倒刺", 1.0, "鲤鱼草鱼"), ("新关东", "新关东钩，无倒刺", 1.0, "鲫鱼"),
                          ("袖钩", "袖钩", 0.9, "小鱼")]),
               d("pack", [("50枚装", "50枚装", 1.0, "")])],
         desc="{b}{s}鱼钩，高碳钢，锋利。",
         usage="钓鱼挂饵"),
    dict(key="float", cat="钓鱼", noun="浮漂", brands=FISH[:3], n=2, price=25,
         dims=[d("mat", [("纳米", "纳米材质，灵敏", 1.0, ""), ("芦苇", "芦苇材质", 1.2, "")]),
               d("set", [("5支装", "5支装，吃铅1.5-3克", 1.0, "")])],
         desc="{b}{s}鱼漂，醒目漂尾。",
         usage="台钓看漂判断鱼口"),
    dict(key="tacklebox", cat="钓鱼", noun="钓箱", brands=FISH, n=2, price=399,
         dims=[d("cap", [("25升", "容量25升，可坐", 0.8, ""), ("35升", "容量35升，保温，四脚可调", 1.2, "")])],
         desc="{b}{s}多功能钓箱，可坐人，带放竿架。",
         usage="钓鱼装渔具、坐着钓鱼、保鲜鱼获"),
    dict(key="net", cat="钓鱼", noun="抄网", brands=FISH[:3], n=1, price=89,
         dims=[d("len", [("3米", "伸缩杆3米，折叠网头", 1.0, "")])],
         desc="{b}{s}抄网，碳素伸缩杆。",
         usage="钓到大鱼时抄鱼上岸"),
    dict(key="goggles", cat="游泳", noun="泳镜", brands=SWIM, n=6, price=69,
         dims=[d("lens", [("平光", "平光镜片", 1.0, ""), ("近视", "近视镜片，可选200-800度", 1.3, "近视人群"),
                          ("电镀", "电镀反光镜片，防强光", 1.4, "户外公开水域")]),
               d("frame", [("大框", "大框，视野开阔", 1.1, ""), ("竞速小框", "竞速小框", 1.0, "比赛")]),
               d("age", [("成人", "成人款", 1.0, ""), ("儿童", "儿童款", 0.7, "儿童")])],
         desc="{b}{s}防雾防水泳镜，硅胶密封圈。",
         usage="游泳池游泳、训练比赛"),
    dict(key="swimcap", cat="游泳", noun="泳帽", brands=SWIM, n=3, price=39,
         dims=[d("mat", [("硅胶", "硅胶材质，防水", 1.0, ""), ("布", "莱卡布，舒适不勒头", 0.6, "")]),
               d("kind", [("长发", "加大款，适合长发", 1.1, "长发女生"), ("成人", "成人均码", 1.0, ""), ("儿童", "儿童款", 0.8, "儿童")])],
         desc="{b}{s}泳帽，保护头发。",
         usage="游泳时保护头发"),
    dict(key="swimsuit", cat="游泳", noun="女士泳衣", brands=SWIM, n=3, price=199,
         dims=[d("kind", [("连体", "连体，带胸垫", 1.0, ""), ("分体", "分体两件套", 1.0, ""), ("连体平角", "连体平角，保守遮肉", 1.1, "")])],
         desc="{b}{s}女士泳衣，抗氯速干。",
         usage="游泳馆游泳、海边度假和温泉"),
    dict(key="kickboard", cat="游泳", noun="浮板", brands=SWIM[:2], n=2, price=35,
         dims=[d("kind", [("A字", "A字浮板，EVA", 1.0, "学游泳"), ("夹腿", "8字夹腿浮板", 0.9, "练手臂划水")])],
         desc="{b}{s}游泳浮板。",
         usage="学游泳、游泳辅助训练"),
    dict(key="earplug", cat="游泳", noun="耳塞鼻夹套装", brands=SWIM[:3], n=1, price=19,
         dims=[d("kind", [("硅胶", "硅胶耳塞加鼻夹", 1.0, "")])],
         desc="{b}{s}游泳耳塞鼻夹套装，防水防呛。",
         usage="游泳时防止耳朵进水和呛水"),
    dict(key="skigoggles", cat="滑雪", noun="滑雪镜", brands=SKI, n=5, price=259,
         dims=[d("lens", [("柱面", "柱面镜片", 0.8, ""), ("球面", "双层球面镜片，视野大", 1.0, ""),
                          ("磁吸球面", "磁吸快换球面镜片，送夜视镜片", 1.5, "")]),
               d("otg", [("可戴近视镜", "OTG设计，可内戴近视眼镜", 1.1, "近视人群"), ("标准", "标准款", 1.0, "")]),
               d("age", [("成人", "成人款", 1.0, ""), ("儿童", "儿童款", 0.7, "儿童")])],
         desc="{b}{s}滑雪镜，防雾防紫外线。",
         usage="滑雪、雪地防雪盲和防风"),
    dict(key="skigloves", cat="滑雪", noun="滑雪手套", brands=SKI, n=4, price=159,
         dims=[d("kind", [("五指", "五指款，可触屏", 1.0, ""), ("连指", "连指款，更保暖", 1.0, "")]),
               d("age", [("成人", "成人款", 1.0, ""), ("儿童", "儿童款", 0.7, "儿童")]),
               d("feat", [("防水加厚", "防水透湿，加厚棉", 1.1, ""), ("护腕加长", "护腕加长", 1.0, "")])],
         desc="{b}{s}滑雪手套，防风防水保暖。",
         usage="滑雪、冬季骑车和雪地保暖"),
    dict(key="skijacket", cat="滑雪", noun="滑雪服", brands=SKI, n=4, price=899,
         dims=[GENDER, d("kind", [("单板", "单板宽松款", 1.0, "单板"), ("双板", "双板修身款", 1.1, "双板")]),
               d("piece", [("套装", "上衣加背带裤套装", 1.5, ""), ("上衣", "单上衣", 1.0, "")])],
         desc="{b}{s}滑雪服，防水15000毫米，保暖棉填充，雪裙防雪。",
         usage="滑雪、雪地游玩"),
    dict(key="skihelmet", cat="滑雪", noun="滑雪头盔", brands=SKI, n=2, price=399,
         dims=[d("age", [("成人", "成人款", 1.0, ""), ("儿童", "儿童款", 0.7, "儿童")]),
               d("kind", [("面罩一体", "面罩雪镜一体", 1.3, ""), ("普通", "普通款", 1.0, "")])],
         desc="{b}{s}滑雪头盔，保暖耳罩，可调节。",
         usage="滑雪时保护头部"),
    dict(key="skipad", cat="滑雪", noun="滑雪护臀", brands=SKI[:3], n=1, price=129,
         dims=[d("kind", [("乌龟", "乌龟造型护臀", 1.0, "初学者")])],
         desc="{b}{s}滑雪护臀，加厚EVA缓冲，摔倒不疼。",
         usage="单板初学者防摔"),
    dict(key="harness", cat="攀岩", noun="安全带", brands=CLIMB, n=2, price=299,
         dims=[d("kind", [("半身式", "半身式坐式安全带，承重22kN", 1.0, ""), ("全身式", "全身式，高空作业可用", 1.4, "高空作业")])],
         desc="{b}{s}攀岩安全带，腿环可调。",
         usage="攀岩、登山、速降和高空作业"),
    dict(key="carabiner", cat="攀岩", noun="主锁", brands=CLIMB, n=2, price=69,
         dims=[d("kind", [("丝扣锁", "丝扣主锁，纵向拉力25kN", 1.0, ""), ("自动锁", "自动锁门，纵向拉力24kN", 1.3, "")])],
         desc="{b}{s}铝合金主锁，D形。",
         usage="攀岩、救援和绳索连接"),
    dict(key="climbshoes", cat="攀岩", noun="攀岩鞋", brands=CLIMB, n=2, price=499,
         dims=[d("kind", [("入门", "入门平板鞋，魔术贴", 1.0, "初学抱石"), ("进阶", "进阶下压鞋，系带", 1.4, "")])],
         desc="{b}{s}攀岩鞋，高摩擦橡胶鞋底。",
         usage="攀岩馆、抱石和野外攀岩"),
    dict(key="chalk", cat="攀岩", noun="镁粉袋", brands=CLIMB[:2], n=1, price=59,
         dims=[d("kind", [("腰挂", "腰挂式，附镁粉球", 1.0, "")])],
         desc="{b}{s}镁粉袋，防止手滑。",
         usage="攀岩、举重和单杠时防手滑"),
    dict(key="rope", cat="攀岩", noun="动力绳", brands=CLIMB, n=2, price=699,
         dims=[d("dia", [("9.8毫米", "直径9.8毫米", 1.0, "")]),
               d("len", [("40米", "长40米", 0.8, ""), ("60米", "长60米", 1.0, ""), ("70米", "长70米", 1.2, "")])],
         desc="{b}{s}攀岩动力绳，防水处理。",
         usage="攀岩先锋、顶绳攀登"),
    dict(key="thermos", cat="水具", noun="保温壶", brands=DRINK, n=6, price=129,
         dims=[d("cap", [("500毫升", "容量500毫升", 0.8, ""), ("750毫升", "容量750毫升", 1.0, ""), ("1升", "容量1升", 1.2, ""),
                         ("1.5升", "容量1.5升，带杯盖", 1.4, "多人"), ("2升", "容量2升，大容量", 1.6, "多人")]),
               d("mat", [("316不锈钢", "316不锈钢内胆，保温24小时", 1.0, ""), ("钛", "纯钛内胆，无金属味", 2.5, "泡茶"),
                         ("真空焖烧", "宽口可焖粥，保温12小时", 1.1, "焖烧粥")])],
         desc="{b}{s}户外保温壶，真空双层，保温保冷。",
         usage="户外徒步、钓鱼、登山和办公室喝热水"),
    dict(key="bladder", cat="水具", noun="水袋", brands=DRINK[:3] + BAGS[:1], n=3, price=69,
         dims=[d("cap", [("1.5升", "容量1.5升", 0.9, ""), ("2升", "容量2升", 1.0, ""), ("3升", "容量3升", 1.2, "长距离")])],
         desc="{b}{s}户外吸管饮水袋，TPU材质，可放背包里。",
         usage="徒步、骑行、越野跑边走边喝水"),
    dict(key="filter", cat="水具", noun="便携净水器", brands=DRINK[:2], n=1, price=259,
         dims=[d("kind", [("超滤", "0.1微米超滤膜，滤除细菌", 1.0, "")])],
         desc="{b}{s}户外净水器，山泉溪水直接过滤饮用。",
         usage="野外取水过滤、应急饮水"),
    dict(key="cup", cat="水具", noun="钛杯", brands=DRINK[:3] + CAMP[:1], n=2, price=99,
         dims=[d("cap", [("300毫升", "容量300毫升", 1.0, ""), ("450毫升", "容量450毫升", 1.2, "")]),
               d("wall", [("单层", "单层可直接加热", 1.0, "煮水"), ("双层", "双层隔热不烫嘴", 1.4, "")])],
         desc="{b}{s}纯钛水杯，轻量，带折叠把手。",
         usage="露营喝水、泡咖啡和煮水"),
]

# Brands that sell exactly one product here (for brand-alone queries).
SOLO = [
    ("tent", "Kestrel", ("2人", "三季", "双层")),
    ("sleepbag", "鹿角", ("木乃伊式", "白鹅绒", "极寒")),
    ("headlamp", "萤火", ("200流明", "电池", "红光")),
    ("lure", "Bassmate", ("枪柄", "M调", "2.1米")),
    ("goggles", "海豚湾", ("近视", "大框", "成人")),
    ("skigoggles", "Glacio", ("磁吸球面", "标准", "成人")),
    ("thermos", "壶中天", ("1升", "钛")),
    ("bikehelmet", "Aerolite", ("公路", "M码", "MIPS")),
    ("pack", "骆驼峰", ("65升", "男款", "带防雨罩")),
    ("chair", "慢营", ("克米特椅", "铝合金")),
    ("spinning", "Tideline", ("5000型", "金属线杯")),
    ("computer", "Cadenza", ("GPS", "彩屏")),
]


# The shop's English names of each product type (its catalog's `aliases` column: other names customers use),
# written from the type's Chinese noun as a shop would list them, never from the query sets.
ENGLISH = {
    "tent": "tent", "tarp": "tarp|canopy", "sleepbag": "sleeping bag", "pad": "sleeping pad|ground mat",
    "airbed": "air mattress|air bed", "stove": "camping stove", "gas": "gas canister", "cookset": "cookware set",
    "lantern": "camping lantern", "chair": "folding chair|camping chair", "table": "folding table",
    "cart": "camping cart", "poles": "trekking poles|hiking poles", "hardshell": "hardshell jacket",
    "softshell": "softshell jacket", "fleece": "fleece jacket", "down": "down jacket", "pants": "quick-dry pants",
    "boots": "hiking boots", "watershoe": "water shoes", "gaiter": "gaiters", "pack": "hiking backpack",
    "daypack": "waist pack", "headlamp": "headlamp", "flashlight": "flashlight", "multitool": "multitool",
    "bikehelmet": "bike helmet|cycling helmet", "jersey": "cycling jersey", "bibs": "cycling shorts",
    "computer": "bike computer", "frontlight": "bike light|front light", "taillight": "tail light",
    "lock": "bike lock", "bikegloves": "cycling gloves", "pump": "bike pump", "taizhu": "fishing pole",
    "lure": "lure rod", "searod": "surf rod", "isorod": "rock fishing rod", "line": "fishing line",
    "spinning": "spinning reel", "baitcaster": "baitcasting reel", "hook": "fishing hooks", "float": "fishing float",
    "tacklebox": "tackle box", "net": "landing net", "goggles": "swim goggles", "swimcap": "swim cap",
    "swimsuit": "swimsuit", "kickboard": "kickboard", "earplug": "ear plugs|nose clip", "skigoggles": "ski goggles",
    "skigloves": "ski gloves", "skijacket": "ski jacket", "skihelmet": "ski helmet", "skipad": "ski hip pad",
    "harness": "climbing harness", "carabiner": "carabiner", "climbshoes": "climbing shoes", "chalk": "chalk bag",
    "rope": "climbing rope", "thermos": "thermos|vacuum flask", "bladder": "hydration bladder",
    "filter": "water filter", "cup": "titanium cup",
}


def _fmt_price(x):
    return f"{x:.2f}"


def _record(rng, t, brand, series, combo):
    labels = [v[0] for v in combo]
    name = f"{brand} {series} {''.join(label for label in labels if label)}{t['noun']}"
    factor = 1.0
    for v in combo:
        factor *= v[2]
    price = round(t["price"] * factor * rng.uniform(0.9, 1.15)) - 0.01
    if price < 5:
        price = 9.9
    specs = "，".join(v[1] for v in combo)
    extra_use = "、".join(v[3] for v in combo if v[3])
    usage = t["usage"] + ("；尤其适合" + extra_use if extra_use else "")
    stock = rng.choice([0, 0, 3, 8, 12, 25, 40, 66, 120, 300])
    attrs = {"type": t["key"], "brand": brand, "series": series}
    for (dk, _), v in zip(t["dims"], combo, strict=False):
        attrs[dk] = v[0]
    return {
        "product_name": name,
        "category": t["cat"],
        "description": t["desc"].format(b=brand, s=series),
        "specifications": specs,
        "usage": usage,
        "brand": brand,
        "price": _fmt_price(price),
        "stock_quantity": stock,
        "aliases": ENGLISH.get(t["key"], ""),
        "_attrs": attrs,
    }


def build():
    rng = random.Random(SEED)
    out = []
    names = set()
    for t in TYPES:
        combos = list(itertools.product(*[vals for _, vals in t["dims"]]))
        used_series = set()
        for brand in t["brands"]:
            for _line in range(LINES):
                series = rng.choice([s for s in SERIES if s not in used_series])
                used_series.add(series)
                for combo in rng.sample(combos, min(t["n"], len(combos))):
                    r = _record(rng, t, brand, series, combo)
                    assert r["product_name"] not in names, r["product_name"]
                    names.add(r["product_name"])
                    out.append(r)
    by_key = {t["key"]: t for t in TYPES}
    for key, brand, labels in SOLO:
        t = by_key[key]
        combo = []
        for (_dk, vals), lab in zip(t["dims"], labels, strict=False):
            combo.append(next(v for v in vals if v[0] == lab))
        r = _record(rng, t, brand, rng.choice(SERIES), tuple(combo))
        assert r["product_name"] not in names
        names.add(r["product_name"])
        out.append(r)
    rng.shuffle(out)
    for i, r in enumerate(out, 1):
        r["product_id"] = f"OD{i:04d}"
    return out


def main():
    recs = build()
    fields = ["product_id", "product_name", "category", "description", "specifications",
              "usage", "brand", "price", "stock_quantity", "aliases"]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalog-outdoor.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump([{k: r[k] for k in fields} for r in recs], f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(recs)} products to {path}")


if __name__ == "__main__":
    main()
